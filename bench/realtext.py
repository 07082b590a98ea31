"""Stores and prompts of real text for bench/bench_hook.py ``--text real``.

A memory joins two real texts of ``../shared/data`` (read at run time, never copied): a note of
memories-real and a LoCoMo turn, or two notes, picked by a seeded generator; its title is the
first words of its first text. At 100,000 memories a word of ordinary developer prose ("test",
"build", "config") is then in thousands of memories, as in a real large store.

The prompts are prompts-dev's topical and conversational prompts. Each is run once in-process
on the largest store (``quipu.prompt.recall`` with the options the hook reads); the first
``--prompts`` that fire and that stay silent are then timed through the real hook process, every
prompt once per round in a rotated order beside the bare interpreter, and reported apart.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import _common as C

from quipu.index import index
from quipu.prompt import evidence, indexread, query, recall, transcript
from quipu.store.memory import Memory
from quipu.store.store import Store
from testing import realistic as R

HOOK = C.REPO / "hooks" / "prompt_submit.py"
GOAL_FIRE_RATIO = {10_000: 1.5, 100_000: 2.0}


def texts(data: Path) -> tuple[list[str], list[str]]:
    """(the bodies of memories-real's notes, LoCoMo's turns)."""
    notes = [n.body for n in R.real_notes(data)]
    turns: list[str] = []
    for conv in json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8")):
        for key, value in conv["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(t["text"] for t in value if t.get("text"))
    return notes, turns


def memories(data: Path, count: int, seed: int) -> list[Memory]:
    notes, turns = texts(data)
    rng = random.Random(seed)
    out = []
    for n in range(count):
        first = rng.choice(notes)
        second = rng.choice(turns) if rng.random() < 0.5 else rng.choice(notes)
        title = " ".join(first.replace("`", "").replace("*", "").split()[:9]).strip("-# ") or "note"
        fields = {"id": f"rt-{n:06d}", "title": title[:200], "class": rng.choice(("rule", "fact", "reference")),
                  "origin": "import", "created": R.CREATED}
        out.append(Memory.create(fields, f"{first.strip()}\n\n{second.strip()}\n"))
    return out


def build(data: Path, scratch: Path, size: int) -> Path:
    root = scratch / f"realtext-{size}"
    if (root / ".cache" / "index.sqlite").is_file():
        return root
    start = time.perf_counter()
    C.bulk_store(root, memories(data, size, seed=size), checkout=False)
    index.ensure_fresh(Store(root))
    print(f"bench: built and indexed a real-text store of {size:,} memories in {time.perf_counter() - start:.1f} s",
          file=sys.stderr)
    return root


def split_prompts(root: Path, prompts: list[str], wanted: int) -> tuple[list[tuple[str, str]], list[str]]:
    """([(prompt, an id it injects)], [silent prompts]), at most ``wanted`` of each. The timed runs
    check only that a prompt that fires injects something (equal scores may swap places)."""
    db = indexread.open_index(str(root / ".cache" / "index.sqlite"))
    fire: list[tuple[str, str]] = []
    silent: list[str] = []
    try:
        options = recall.Options.from_config(indexread.index_config(db))
        for text in prompts:
            if transcript.is_machine_text(text):
                continue  # the hook never answers what looks like a tool's or the harness's text
            hits = recall.recall(db, text, "", options).hits
            if hits and len(fire) < wanted:
                fire.append((text, hits[0].id))
            elif not hits and len(silent) < wanted and evidence.names_a_subject(
                    text, query.extract_terms(text)):
                silent.append(text)  # silent after opening the index: the costly kind of silence
    finally:
        db.close()
    return fire, silent


def spawn(argv: list[str], stdin: str, stdout: str, env: dict[str, str]) -> tuple[float, float, int]:
    """``_common.spawn_timed``, with the child's CPU time (user + system, from ``wait4``) beside
    its wall time: on a shared machine the CPU time moves less with the other processes."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, stdin, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _pid, status, usage = os.wait4(pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def run(args: argparse.Namespace, sizes: list[int], scratch: Path, env: dict[str, str], machine: str) -> int:
    data = R.data_dir()
    if data is None or not (data / "locomo" / "locomo10.json").is_file():
        print(f"bench_hook: --text real skipped: {R.MISSING_DATA} (and locomo/locomo10.json)", file=sys.stderr)
        return 0
    roots = {size: build(data, scratch, size) for size in sizes}
    topical = [p.text for p in R.real_prompts(data, "topical") if len(p.text) < 2000]
    random.Random(5).shuffle(topical)
    fire, silent = split_prompts(roots[sizes[-1]], topical, args.prompts)
    py = C.REAL_PYTHON
    bare = [py, "-I", "-S", "-c", "pass"]
    hook = [py, "-I", "-S", str(HOOK)]
    # The hook as it runs by default (answered by the prompt server, which the warm-up's first
    # prompt starts) and in its own process alone (QUIPU_PROMPT_SERVER=off), side by side.
    modes = (("", {}), ("-alone", {"QUIPU_PROMPT_SERVER": "off"}))
    # (group, argv, event or None, root or None, expectation, extra environment)
    commands: list[tuple[str, list[str], dict[str, str] | None, Path | None, str, dict[str, str]]] = [
        ("bare", bare, None, None, "", {})]
    for size in sizes:
        for mode, extra in modes:
            for text, target in fire:
                commands.append((f"fire-{size}{mode}", hook, {"prompt": text, "transcript_path": ""}, roots[size],
                                 target if size == sizes[-1] else "", extra))
            for text in silent:
                commands.append((f"silent-{size}{mode}", hook, {"prompt": text, "transcript_path": ""}, roots[size],
                                 "silent" if size == sizes[-1] else "", extra))
    events = scratch / "rt-events"
    events.mkdir(exist_ok=True)
    walls: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    checks: dict[str, list[bool]] = {}
    server_cpu = None
    for rnd in range(args.warmup + args.rounds):
        if rnd == args.warmup:
            server_cpu = _server_cpu(env)
        shift = rnd % len(commands)
        for k, (group, argv, event, root, expect, extra) in enumerate(commands[shift:] + commands[:shift]):
            stdin, child_env = os.devnull, env
            if event is not None and root is not None:
                stdin = str(events / f"{k}.json")
                # a new session id each run: a kept store remembers what each session was shown
                Path(stdin).write_text(json.dumps({"session_id": f"rt-{os.getpid()}-{rnd}-{k}", "cwd": str(root),
                                                   "hook_event_name": "UserPromptSubmit", **event}), encoding="utf-8")
                child_env = {**env, "QUIPU_STORE": str(root), **extra}
            out = str(events / f"{k}.out")
            wall, cpu, code = spawn(argv, stdin, out, child_env)
            if rnd < args.warmup:
                continue
            walls.setdefault(group, []).append(wall)
            cpus.setdefault(group, []).append(cpu)
            if expect:
                text = Path(out).read_text(encoding="utf-8")
                ok = code == 0 and (text == "" if expect == "silent" else "(id rt-" in text)
                checks.setdefault(group, []).append(ok)
                if not ok and os.environ.get("QUIPU_BENCH_DEBUG"):
                    print(f"bench_hook: {group} expected {expect!r}, got {text[:200]!r}", file=sys.stderr)
    served = sum(len(v) for g, v in walls.items() if g != "bare" and not g.endswith("-alone"))
    after = _server_cpu(env)
    per_prompt = ""
    if server_cpu is not None and after is not None and after[0] == server_cpu[0] and served:
        per_prompt = f"{(after[1] - server_cpu[1]) / served * 1000:.1f} ms"
    C.stop_server(env["QUIPU_HOME"])
    base = C.median(walls["bare"])
    base_cpu = C.median(cpus["bare"])
    rows = [("`python -I -S -c pass` (bare, baseline)", "", f"{base * 1000:.1f}",
             f"{C.percentile(walls['bare'], 95) * 1000:.1f}", "1.00x", f"{base_cpu * 1000:.1f} (1.00x)", "", "")]
    reading = []
    for size in sizes:
        for mode, _extra in modes:
            for kind, prompts in (("fire", fire), ("silent", silent)):
                group = f"{kind}-{size}{mode}"
                times = walls.get(group, [])
                if not times:
                    continue
                ratio = C.median(times) / base
                goal = ""
                if not mode and size in GOAL_FIRE_RATIO:
                    goal = f"<= {GOAL_FIRE_RATIO[size]}x: " + ("met" if ratio <= GOAL_FIRE_RATIO[size] else "**not met**")
                    reading.append(f"{size:,} memories, prompts that {'fire' if kind == 'fire' else 'stay silent'}: "
                                   f"p50 {ratio:.2f}x the bare start ({goal})")
                got = checks.get(group, [])
                check = f"{'injected' if kind == 'fire' else 'silent'} {sum(got)}/{len(got)}" if got else ""
                cpu = C.median(cpus[group])
                how = "answered by the prompt server" if not mode else "alone in its process"
                rows.append((f"hook {how}, {size:,} real-text memories, prompts that "
                             f"{'fire' if kind == 'fire' else 'stay silent'}", str(len(prompts)),
                             f"{C.median(times) * 1000:.1f}", f"{C.percentile(times, 95) * 1000:.1f}",
                             f"{ratio:.2f}x", f"{cpu * 1000:.1f} ({cpu / base_cpu:.2f}x)", goal, check))
    body = (f"Real text: each memory joins two texts of ../shared/data (memories-real notes, LoCoMo turns). "
            f"Prompts: prompts-dev topical prompts, split in-process on the {sizes[-1]:,} store into "
            f"{len(fire)} that fire and {len(silent)} that open the index and stay silent. Rounds: {args.rounds} "
            f"timed (+{args.warmup} warm-up, whose first prompt starts the prompt server), every prompt once per "
            "round, rotated. The hook runs as Claude Code runs it, answered by the prompt server (its modules kept "
            "loaded); beside it, the same prompts with `QUIPU_PROMPT_SERVER=off`, recalled in the hook's own "
            "process. The CPU column is the hook process's own; the server's CPU time per prompt it answered: "
            f"{per_prompt or 'not measured (the server was not the same process throughout)'}.\n\n"
            + C.table(["command", "prompts", "p50 ms", "p95 ms", "p50 / bare `-I -S`", "CPU ms p50 (/ bare)",
                       "goal (p50)", "output check"], rows)
            + "\n\nReading: " + ("; ".join(reading) or "no store size with a goal") + ".")
    print(body)
    if args.write_results:
        C.update_results("bench_hook_realtext", "Prompt hook wall time on real text: bench/bench_hook.py --text real",
                         body, command=C.command_line(), machine_line=machine)
    return 0


def _server_cpu(env: dict[str, str]) -> tuple[int, float] | None:
    """(pid, user + system CPU seconds so far) of the prompt server, or None."""
    pid = C.server_pid(env["QUIPU_HOME"])
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return pid, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_notes(data: Path, folder: Path, count: int, seed: int) -> None:
    """``count`` markdown notes of real text under ``folder`` (folders of 100), each two real texts
    joined as ``memories`` joins them: a third with YAML frontmatter (title, tags, date), a third
    with a heading, a third plain text (the title then comes from the file name)."""
    notes, turns = texts(data)
    rng = random.Random(seed)
    for n in range(count):
        first = rng.choice(notes)
        second = rng.choice(turns) if rng.random() < 0.5 else rng.choice(notes)
        title = " ".join(first.replace("`", "").replace("*", "").split()[:9]).strip("-# ") or "note"
        body = f"{first.strip()}\n\n{second.strip()}\n"
        path = folder / f"part-{n // 100:04d}" / f"note-{n:06d}.md"
        if n % 100 == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        if n % 3 == 0:
            text = (f"---\ntitle: {json.dumps(title[:200])}\ntags: [imported, part-{n // 100}]\n"
                    f"date: 2026-01-{n % 28 + 1:02d}\n---\n{body}")
        elif n % 3 == 1:
            text = f"# {title[:200]}\n\n{body}"
        else:
            text = body
        path.write_text(text, encoding="utf-8")
