"""The prompt hook of this checkout beside the hook of another, on stores of real text, in one run.

Each tree builds its own store of 10,000 memories of real text with its own code (the same seeded
texts: real notes and LoCoMo turns of ../shared/data, read at run time), so each hook reads the
index its own version writes. Then prompts-dev's first topical prompts go through both hooks as
Claude Code starts them (``<real python> -I -S hooks/prompt_submit.py``, a new session each call,
``QUIPU_PROMPT_SERVER=off`` so that each tree's own code recalls in the hook's process)
beside a bare ``-I -S -c pass``, alternated, and the medians are compared: the ratio first.

Usage: git worktree add /tmp/quipu-base REV, then
       python bench/bench_hook_beside.py /tmp/quipu-base [--rounds 12] [--prompts 12]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
PY = os.path.realpath(sys.executable)  # the hook runs as Claude Code starts it: the real interpreter, -I -S
SIZE = 10_000

BUILD = r'''
import json, random, sys
from pathlib import Path
tree, root = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(tree))
from quipu.index import index
from quipu.store.memory import Memory
from quipu.store.store import Store
from testing import realistic as R
from testing.fixtures import bulk_store
data = R.data_dir()
notes = [n.body for n in R.real_notes(data)]
turns = []
for conv in json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8")):
    for k, v in conv["conversation"].items():
        if k.startswith("session_") and isinstance(v, list):
            turns += [t["text"] for t in v if t.get("text")]
rng = random.Random(int(sys.argv[3]))
mems = []
for n in range(int(sys.argv[3])):
    first = rng.choice(notes)
    second = rng.choice(turns) if rng.random() < 0.5 else rng.choice(notes)
    title = " ".join(first.replace("`", "").replace("*", "").split()[:9]).strip("-# ") or "note"
    mems.append(Memory.create({"id": f"rt-{n:06d}", "title": title[:200], "origin": "import", "created": R.CREATED,
                               "class": rng.choice(("rule", "fact", "reference"))},
                              f"{first.strip()}\n\n{second.strip()}\n"))
bulk_store(root, mems, checkout=False)
index.ensure_fresh(Store(root))
'''


def build(tree: Path, root: Path, home: Path) -> None:
    env = {**os.environ, "QUIPU_HOME": str(home), "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-c", BUILD, str(tree), str(root), str(SIZE)], env=env, check=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", type=Path, help="a checkout of the version to compare with (git worktree add)")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--prompts", type=int, default=12)
    args = p.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from testing import realistic as R

    prompts = [q.text for q in R.real_prompts(R.data_dir(), "topical")][: args.prompts]
    scratch = Path(tempfile.mkdtemp(prefix="quipu-hook-beside-"))
    sides = {"base": (args.base.resolve(), scratch / "base"), "this": (HERE, scratch / "this")}
    for name, (tree, root) in sides.items():
        build(tree, root, scratch / f"home-{name}")
    times: dict[str, list[float]] = {k: [] for k in [*sides, "bare"]}
    fired = dict.fromkeys(sides, 0)
    calls = 0
    for rnd in range(args.rounds):
        for i, prompt in enumerate(prompts):
            order = [*sides, "bare"] if (rnd + i) % 2 else ["bare", "this", "base"]
            for name in order:
                calls += 1
                if name == "bare":
                    start = time.perf_counter()
                    subprocess.run([PY, "-I", "-S", "-c", "pass"], check=False)
                    times[name].append(time.perf_counter() - start)
                    continue
                tree, root = sides[name]
                event = json.dumps({"prompt": prompt, "cwd": str(root), "session_id": f"s{calls}",
                                    "hook_event_name": "UserPromptSubmit"})
                env = {"PATH": os.environ.get("PATH", ""), "HOME": str(scratch), "QUIPU_STORE": str(root),
                       "QUIPU_HOME": str(scratch / f"home-{name}"),
                       "QUIPU_PROMPT_SERVER": "off"}  # the two trees' code, each in the hook's own process
                start = time.perf_counter()
                out = subprocess.run([PY, "-I", "-S", str(tree / "hooks" / "prompt_submit.py")], input=event.encode(),
                                     capture_output=True, env=env, check=False)
                times[name].append(time.perf_counter() - start)
                fired[name] += bool(out.stdout.strip()) if rnd == 0 else 0
    bare = statistics.median(times["bare"])
    this, base = statistics.median(times["this"]), statistics.median(times["base"])
    print(f"this / base: {this / base:.2f}x (p50 {this * 1000:.1f} against {base * 1000:.1f} ms, {len(times['bare'])} "
          f"alternated runs each, {SIZE:,} real-text memories)")
    for name in sides:
        m = statistics.median(times[name])
        print(f"{name}: {m / bare:.2f}x a bare -I -S start ({bare * 1000:.1f} ms); prompts injecting {fired[name]}/{len(prompts)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
