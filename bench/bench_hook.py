"""Benchmark of the UserPromptSubmit hook (issue 3): wall time and peak RSS of the real process.

The hook runs exactly as Claude Code starts it: ``<real python> -I -S hooks/prompt_submit.py`` with
the event JSON on stdin (``cwd`` and ``QUIPU_STORE`` point at the store), on stores of 1,000,
10,000 and 100,000 memories, beside ``<real python> -I -S -c pass`` and ``<real python> -c pass``.
Every round runs every command once, in an order rotated each round, so all commands share the
machine's noise. Each run is a ``posix_spawn`` + ``wait4``: the wall time and the child's own
peak RSS. Every hook run's output is checked (the matching prompt must inject the target memory;
the silent prompt must print nothing), so a hook failing open fast cannot pass for a fast hook.

Also: a silent prompt (no topic of its own) and the matching prompt with a transcript of a few MB
(the hook reads only its tail).

Goals: p50 <= 1.5x the bare ``-I -S`` interpreter at 10,000 memories and <= 2x at 100,000;
peak RSS under 30 MB.

``--text real`` builds the stores from real text instead (``bench/realtext.py``): each memory
joins two texts of ``../shared/data`` (the notes of memories-real and the turns of LoCoMo), so a
common word of real prompts is in thousands of memories at 100,000. Its prompts are real too:
prompts-dev's topical and conversational prompts, run once in-process on the largest store and
split into prompts that fire and prompts that stay silent, timed apart (``--prompts`` of each).

Usage: python bench/bench_hook.py [--sizes 1000,10000,100000] [--rounds 40] [--text random|real] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import realtext  # noqa: E402

from quipu.index import index  # noqa: E402
from quipu.store.memory import Memory  # noqa: E402
from quipu.store.store import Store  # noqa: E402

HOOK = C.REPO / "hooks" / "prompt_submit.py"
SILENT_PROMPT = "ok, looks good — go ahead and continue"
GOAL_RATIO = {10_000: 1.5, 100_000: 2.0}
GOAL_RSS_MB = 30.0
GNU_TIME = "/usr/bin/time"


def prompt_for(target: Memory) -> str:
    """A question a person might type about ``target``: some of its title words and a topic."""
    words = target.title.lower().split()
    topic = target.topics[0] if target.topics else words[-1]
    return (f"Before I touch the deploy again: what did we decide about {words[0]} and {words[1]} "
            f"for the {words[2]} work? I think it was related to {topic}.")


def write_transcript(path: Path, corpus: C.Corpus, target: Memory, megabytes: float) -> int:
    """A Claude Code style JSONL transcript of about ``megabytes``: human prompts, assistant text,
    and large tool results; its last human prompt and assistant text mention the target's topic."""
    records: list[str] = []
    size = 0
    n = 0
    session = "bench-transcript"
    while size < megabytes * 1_000_000:
        n += 1
        turn = [
            {"type": "user", "sessionId": session, "uuid": f"u{n}", "promptSource": "typed",
             "message": {"role": "user", "content": corpus.sentence(20)}},
            {"type": "assistant", "sessionId": session, "uuid": f"a{n}",
             "message": {"role": "assistant", "content": [
                 {"type": "text", "text": corpus.sentence(40)},
                 {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls -la"}}]}},
            {"type": "user", "sessionId": session, "uuid": f"r{n}", "toolUseResult": {"stdout": "..."},
             "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": f"t{n}", "content": corpus.sentence(1200)}]}},
        ]
        for record in turn:
            line = json.dumps(record)
            records.append(line)
            size += len(line) + 1
    topic = target.topics[-1] if target.topics else target.title.split()[-1]
    records.append(json.dumps({"type": "user", "sessionId": session, "uuid": "last-u", "promptSource": "typed",
                               "message": {"role": "user", "content": f"Let us look at the {topic} notes next."}}))
    records.append(json.dumps({"type": "assistant", "sessionId": session, "uuid": "last-a", "message": {
        "role": "assistant", "content": [{"type": "text", "text": f"The {topic} notes mention "
                                          f"{target.title.lower()} and a few open questions."}]}}))
    data = "\n".join(records) + "\n"
    path.write_text(data, encoding="utf-8")
    return len(data.encode("utf-8"))


def index_file(root: Path) -> str:
    return str(root / ".cache" / "index.sqlite")


def peak_rss_kib(argv: list[str], stdin: str, env: dict[str, str]) -> int | None:
    """The peak RSS of one run measured by /usr/bin/time, whose own small size is the child's
    starting point (``wait4`` from this big benchmark process would report our own RSS: Linux
    carries the parent's high-water mark across fork and exec)."""
    if not os.path.exists(GNU_TIME):
        return None
    import subprocess

    with open(stdin, "rb") as fh:
        done = subprocess.run([GNU_TIME, "-f", "%M", *argv], stdin=fh, capture_output=True, env=env)
    try:
        return int(done.stderr.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def build(scratch: Path, size: int, seed: int) -> tuple[Path, Memory]:
    corpus = C.Corpus(seed=seed)
    start = time.perf_counter()
    memories = corpus.memories(size)
    target = memories[size // 2]
    root = scratch / f"store-{size}"
    C.bulk_store(root, memories, checkout=False)
    index.ensure_fresh(Store(root))
    print(f"bench: built and indexed a store of {size:,} memories in {time.perf_counter() - start:.1f} s",
          file=sys.stderr)
    return root, target


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000", help="store sizes (default 1000,10000,100000)")
    p.add_argument("--rounds", type=int, default=40, help="timed rounds (default 40)")
    p.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default 3)")
    p.add_argument("--transcript-mb", type=float, default=4.0, help="size of the transcript fixture (default 4)")
    p.add_argument("--rss-runs", type=int, default=3, help="runs per command for peak RSS (default 3)")
    p.add_argument("--no-import-rows", dest="import_rows", action="store_false",
                   help="leave out the reference rows that price each import")
    p.add_argument("--text", choices=("random", "real"), default="random",
                   help="random words (default) or real text from ../shared/data (see bench/realtext.py)")
    p.add_argument("--prompts", type=int, default=6, help="--text real: prompts that fire and that stay silent, each")
    p.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder, removed)")
    p.add_argument("--write-results", action="store_true", help="update the bench_hook section of bench/RESULTS.md")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-hook")
    env = C.isolate(scratch)
    C.compile_quipu()  # timed quipu processes read bytecode, as installed from a wheel
    try:
        if args.text == "real":
            return realtext.run(args, sizes, scratch, env, machine)
        stores = {size: build(scratch, size, seed=size) for size in sizes}
        big = [s for s in sizes if s >= 10_000] or sizes[-1:]
        transcript = scratch / "transcript.jsonl"
        mid_target = stores[big[0]][1]
        transcript_bytes = write_transcript(transcript, C.Corpus(seed=5), mid_target, args.transcript_mb)

        # (name, argv, event or None, store root or None, expectation); references first.
        py = C.REAL_PYTHON
        hook = [py, "-I", "-S", str(HOOK)]
        ref_root, ref_target = stores[big[0]]
        floor_sql = (
            "import sqlite3; db = sqlite3.connect('file:%s?mode=ro', uri=True); "
            "db.execute(\"SELECT m.id, m.title FROM memory_fts JOIN memories m ON m.rowid = memory_fts.rowid "
            "WHERE memory_fts MATCH ? ORDER BY bm25(memory_fts) LIMIT 5\", (%r,)).fetchall()"
            % (index_file(ref_root), " OR ".join(f'"{w}"' for w in ref_target.title.lower().split()[:3]))
        )
        commands: list[tuple[str, list[str], dict[str, str] | None, Path | None, str]] = [
            ("`python -I -S -c pass` (bare, baseline)", [py, "-I", "-S", "-c", "pass"], None, None, ""),
            ("`python -c pass` (default start)", [py, "-c", "pass"], None, None, ""),
        ]
        if args.import_rows:
            commands += [
                ("ref: `-I -S -c 'import sqlite3'`", [py, "-I", "-S", "-c", "import sqlite3"], None, None, ""),
                ("ref: `-I -S -c 'import _sqlite3, re'` (the least a regex + FTS5 hook imports)",
                 [py, "-I", "-S", "-c", "import _sqlite3, re"], None, None, ""),
                ("ref: `-I -S -c 'import json, re, sqlite3'`", [py, "-I", "-S", "-c", "import json, re, sqlite3"],
                 None, None, ""),
                ("ref: `... json, re, sqlite3, dataclasses, typing`",
                 [py, "-I", "-S", "-c", "import json, re, sqlite3, dataclasses, typing"], None, None, ""),
                ("ref: load the hook's modules only (as the hook does, `quipu.prompt.load_prompt_path`), no work",
                 [py, "-I", "-S", "-c",
                  f"import sys; sys.path.append({str(C.REPO)!r}); import quipu.prompt; quipu.prompt.load_prompt_path()"],
                 None, None, ""),
                (f"ref floor: `import sqlite3` + one FTS5 top-5 query on the {big[0]:,} index",
                 [py, "-I", "-S", "-c", floor_sql], None, None, ""),
            ]
        for size in sizes:
            root, target = stores[size]
            commands.append((f"hook, {size:,} memories, matching prompt", hook,
                             {"prompt": prompt_for(target), "transcript_path": ""}, root, target.id))
        for size in big:
            root, target = stores[size]
            commands.append((f"hook, {size:,} memories, silent prompt (no topic)", hook,
                             {"prompt": SILENT_PROMPT, "transcript_path": ""}, root, "silent"))
            commands.append((f"hook, {size:,} memories, matching prompt + {transcript_bytes / 1e6:.1f} MB transcript",
                             hook, {"prompt": prompt_for(target), "transcript_path": str(transcript)}, root, target.id))

        events = scratch / "events"
        events.mkdir(exist_ok=True)
        outputs = scratch / "outputs"
        outputs.mkdir(exist_ok=True)
        walls: dict[str, list[float]] = {c[0]: [] for c in commands}
        rss: dict[str, int] = {c[0]: 0 for c in commands}
        checks: dict[str, list[bool]] = {c[0]: [] for c in commands}
        total = args.warmup + args.rounds
        for rnd in range(total):
            shift = rnd % len(commands)
            for k, (name, argv_, event, root, expect) in enumerate(commands[shift:] + commands[:shift]):
                stdin = os.devnull
                child_env = env
                if event is not None and root is not None:
                    stdin = str(events / f"{k}.json")
                    payload = {"session_id": f"bench-{rnd}-{k}", "cwd": str(root),
                               "hook_event_name": "UserPromptSubmit", **event}
                    Path(stdin).write_text(json.dumps(payload), encoding="utf-8")
                    child_env = {**env, "QUIPU_STORE": str(root)}
                out = str(outputs / f"{k}.out")
                wall, _maxrss, code = C.spawn_timed(argv_, stdin=stdin, stdout=out, env=child_env, cwd=None)
                if rnd < args.warmup:
                    continue
                walls[name].append(wall)
                if expect:
                    text = Path(out).read_text(encoding="utf-8")
                    ok = code == 0 and (text == "" if expect == "silent" else expect in text)
                    checks[name].append(ok)

        # Peak RSS in a separate pass through /usr/bin/time (see peak_rss_kib).
        for k, (name, argv_, event, root, _expect) in enumerate(commands):
            stdin = os.devnull
            child_env = env
            if event is not None and root is not None:
                stdin = str(events / f"rss-{k}.json")
                Path(stdin).write_text(json.dumps({"session_id": f"bench-rss-{k}", "cwd": str(root),
                                                   "hook_event_name": "UserPromptSubmit", **event}), encoding="utf-8")
                child_env = {**env, "QUIPU_STORE": str(root)}
            for _ in range(args.rss_runs):
                value = peak_rss_kib(argv_, stdin, child_env)
                if value is not None:
                    rss[name] = max(rss[name], value)

        bare = C.median(walls[commands[0][0]])
        rows = []
        ratios: dict[int, float] = {}
        for name, _argv, _event, root, expect in commands:
            times = walls[name]
            p50, p95 = C.median(times), C.percentile(times, 95)
            ratio = p50 / bare
            size = next((s for s in sizes if root is not None and stores[s][0] == root), None)
            goal = ""
            if expect and expect != "silent" and size in GOAL_RATIO and "transcript" not in name:
                ratios[size] = ratio
                goal = f"<= {GOAL_RATIO[size]}x: " + ("met" if ratio <= GOAL_RATIO[size] else "**not met**")
            rss_mb = rss[name] / 1024
            rss_goal = "" if not expect else (" (met)" if rss_mb < GOAL_RSS_MB else " (**not met**)")
            rss_text = f"{rss_mb:.1f}{rss_goal}" if rss[name] else "n/a"
            output = ""
            if expect:
                good = sum(checks[name])
                what = "silent" if expect == "silent" else "target injected"
                output = f"{what} {good}/{len(checks[name])}"
            rows.append([name, f"{p50 * 1000:.1f}", f"{p95 * 1000:.1f}", f"{ratio:.2f}x", goal,
                         rss_text, output])
        reading = "; ".join(f"{size:,} memories: hook p50 {ratios[size]:.2f}x the bare interpreter "
                            f"(goal <= {GOAL_RATIO[size]}x: {'met' if ratios[size] <= GOAL_RATIO[size] else 'NOT met'})"
                            for size in sizes if size in GOAL_RATIO and size in ratios) or "no store size with a goal"
        max_rss = max(rss[c[0]] for c in commands if c[4]) / 1024
        floor = [r for r in rows if r[0].startswith("ref floor")]
        floor_text = f" A stdlib-only floor (sqlite3 + one FTS5 query) is {floor[0][3]} the bare start." if floor else ""
        body = (
            f"Rounds: {args.rounds} timed (+{args.warmup} warm-up), every command once per round in a rotated "
            f"order. Stores built in bulk (one fast-import commit, working tree not checked out: the hook reads "
            f"only the index and `.git/HEAD`), index fresh. Transcript fixture: {transcript_bytes / 1e6:.1f} MB "
            f"JSONL.\n\n"
            + C.table(["command", "p50 ms", "p95 ms", "p50 / bare `-I -S`", "goal (p50)", f"peak RSS MB (< 30; max of {args.rss_runs} runs, /usr/bin/time)",
                       "output check"], rows)
            + f"\n\nReading: {reading}; peak RSS of any hook run {max_rss:.1f} MB.{floor_text} "
            "The `ref:` rows price the imports: each is a separate process in the same rotation."
        )
        print(body)
        if args.write_results:
            C.update_results("bench_hook", "Prompt hook wall time and memory (issue 3): bench/bench_hook.py", body,
                             command=C.command_line(), machine_line=machine)
    finally:
        C.cleanup(scratch, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
