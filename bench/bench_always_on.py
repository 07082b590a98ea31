"""Benchmark of the always-on layer (issue 6): its size in tokens (characters / 4) on the example store.

Scenarios, each a fresh store built from testing/example_memories.json:
(a) the example store as shipped: no profile, no memory marked always-on;
(b) the example store set up as a user would: its rules and preferences marked always-on and a
    profile of six realistic lines;
(c) the caps reached: a full profile (14 lines, close to 1,375 characters) and every example
    memory marked always-on;
(d) overload: an over-full hand-edited profile (30 lines) and 50 extra always-on rules; the layer
    must stay at or under the budget and list what it left out.
Also the wall time of `quipu session-start --hook` as a process (median of a few runs) on (b).

Goal: the always-on layer at or under 1,300 tokens (Hermes' size) in every scenario.
The enrichment half of issue 6 (recall with and without model-proposed aliases) is not measured:
no real model run was recorded, and scripted aliases would measure nothing but the script.

Usage: python bench/bench_always_on.py [--runs 5] [--keep DIR] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.claude import always_on  # noqa: E402
from quipu.index import index
from quipu.capture import profile
from quipu.store.memory import Memory, now_utc  # noqa: E402
from quipu.store.store import Store  # noqa: E402
from testing.fixtures import example_memories  # noqa: E402

PROFILE_LINES = [
    ("Identity", "The user runs a small web shop and is its only backend developer"),
    ("Identity", "The user writes in English and reads Portuguese"),
    ("Preference", "The user prefers answers with the code first and the reasoning after"),
    ("Preference", "The user prefers tabs for indentation in Go and spaces in Python"),
    ("Environment", "The user develops on Debian with Neovim and deploys shop-api from GitHub Actions"),
    ("Working style", "The user reviews every database migration by hand before it runs"),
]
FILLER = [
    ("Identity", "The user has maintained the shop's invoice exporter since it was first written"),
    ("Preference", "The user likes commit messages that explain why, in the imperative subject style"),
    ("Environment", "The user keeps dotfiles in a chezmoi repository shared by two machines"),
    ("Working style", "The user writes a short design note before any refactor that spans services"),
    ("Preference", "The user favours small pull requests that can be reviewed in one sitting"),
    ("Working style", "The user pairs with the designer on any change to the checkout flow"),
    ("Environment", "The user runs Postgres and Redis for development in Docker compose"),
    ("Identity", "The user is the person on call for payment incidents outside office hours"),
]


def build(path: Path, *, mark: set[str] | str, lines: list[tuple[str, str]], extra_rules: int = 0,
          hand_profile: int = 0) -> Store:
    store, _ = Store.init(path)
    for m in example_memories():
        if mark == "all" or m.id in mark:
            m = m.with_changes(always_on=True)
        store.add(m)
    for n in range(extra_rules):
        store.add(Memory.create({
            "id": f"bench-rule-{n:02d}", "title": f"Releases of service {n} need a second reviewer", "class": "rule",
            "description": f"Service {n} ships only after a second reviewer signs off", "created": now_utc(),
            "always_on": True}, "A second reviewer signs the release issue.\n"))
    for prefix, text in lines:
        profile.add_line(store, prefix, text)
    if hand_profile:
        body = "\n".join(f"- {profile.PREFIXES[n % 4]}: The user has durable trait number {n} described at length"
                         for n in range(hand_profile))
        store.commit({profile.PROFILE_PATH: f"# Profile\n\n{body}\n".encode()}, "bench: hand-edited profile",
                     {"Quipu-Action": "edit", "Quipu-Memory": "profile"})
    index.ensure_fresh(store)
    return store


def hook_seconds(store: Store, runs: int) -> float:
    event = json.dumps({"session_id": "bench", "cwd": str(store.root), "hook_event_name": "SessionStart",
                        "source": "startup"})
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "quipu", "--store", str(store.root), "session-start", "--hook"],
                              input=event, capture_output=True, text=True, cwd=str(C.REPO))
        times.append(time.perf_counter() - start)
        if proc.returncode != 0 or "additionalContext" not in proc.stdout:
            raise SystemExit(f"bench: the hook gave no context: {proc.stderr}")
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="hook process runs to take the median of")
    parser.add_argument("--keep", metavar="DIR", help="build the stores here and keep them")
    parser.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    scratch = C.scratch_dir(args.keep, "always-on")
    C.isolate(scratch)
    C.compile_quipu()  # timed quipu processes read bytecode, as installed from a wheel
    standing = {m.id for m in example_memories() if m.cls in ("rule", "preference")}
    scenarios = [
        ("(a) example store as shipped", dict(mark=set(), lines=[])),
        (f"(b) its {len(standing)} rules/preferences always-on, 6-line profile",
         dict(mark=standing, lines=PROFILE_LINES)),
        ("(c) full profile (14 lines), all 14 memories always-on (13 active)",
         dict(mark="all", lines=PROFILE_LINES + FILLER)),
        ("(d) 30-line hand-edited profile, 14 + 50 always-on rules", dict(mark="all", lines=[], extra_rules=50,
                                                                           hand_profile=30)),
    ]
    rows = []
    worst = 0
    hook_s = 0.0
    try:
        for n, (name, spec) in enumerate(scenarios):
            store = build(scratch / f"store-{n}", **spec)  # type: ignore[arg-type]
            start = time.perf_counter()
            layer = always_on.build(store)
            build_ms = (time.perf_counter() - start) * 1000
            card = profile.read_card(store)
            worst = max(worst, layer.tokens)
            rules_out = sum(item.kind == "rule" for item in layer.left_out)
            lines_out = len(layer.left_out) - rules_out
            rows.append([name, layer.tokens, len(layer.text), card.header(), len(layer.rules), rules_out, lines_out,
                         f"{build_ms:.0f}"])
            if n == 1:
                hook_s = hook_seconds(store, args.runs)
            print(f"{name}: {layer.tokens} tokens ({len(layer.text)} chars); left out {rules_out} rules, "
                  f"{lines_out} profile lines", file=sys.stderr)
    finally:
        C.cleanup(scratch, args.keep)
    table = C.table(["scenario", "tokens", "chars", "profile", "rules in", "rules left out", "lines left out",
                     "build ms"], rows)
    verdict = "met" if worst <= always_on.BUDGET_TOKENS else "NOT met"
    body = (
        f"{table}\n\n"
        f"Tokens are characters / {always_on.CHARS_PER_TOKEN} of the SessionStart `additionalContext` (the fenced "
        "profile and always-on rules). Left-out rules stay searchable; left-out profile lines of a hand-edited card "
        "become searchable with `quipu profile fit`; `quipu doctor` lists both.\n"
        f"`quipu session-start --hook` as a process on (b): median {hook_s * 1000:.0f} ms of {args.runs} runs "
        "(interpreter start, imports of pygit2, the index read).\n"
        f"Goal <= {always_on.BUDGET_TOKENS} tokens in every scenario: {verdict} (largest {worst}).\n\n"
        "Enrichment aliases (recall bench with and without model-proposed aliases): **not measured**. No real "
        "model run producing aliases was recorded, and aliases written by a script would measure the script. "
        "Capture keeps the aliases the model proposes after dropping copies of the memory's own words "
        "(`quipu.capture.enrich.filter_aliases`), as the design's own measurement found copies made recall worse."
    )
    print(body)
    if args.write_results:
        C.update_results("always-on", "Always-on layer (issue 6)", body, command=C.command_line(),
                         machine_line=C.machine())
    return 0 if worst <= always_on.BUDGET_TOKENS else 1


if __name__ == "__main__":
    raise SystemExit(main())
