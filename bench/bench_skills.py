"""Skills (`quipu skills`): detection over 1,000 sessions / 70,000 turns, its wall time and model calls.

Two corpora of ``--sessions`` sessions of ``--turns-per-session`` turns (default 1,000 x 70), half
prompts and half replies, each reply with three to six tool calls, indexed by ``index.rebuild``:
1. "unique": every session's commands are its own (other programs, other sub-commands), so no
   procedure recurs in three sessions. Goal: 0 candidates and 0 model calls from `quipu skills draft`.
2. "repeated": the same, plus five procedures each run in 3 to 40 sessions, with the error a
   person pasted before it: candidates found and drafted, one model call each (a scripted model).
Wall time of detection (in process, median of ``--runs``) beside the baseline of reading every
reply's text with one SQL query in the same run; `quipu skills draft` as a fresh process.

Usage: python bench/bench_skills.py [--sessions N] [--turns-per-session N] [--runs N] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.history import index  # noqa: E402
from quipu.history.archive import Layout, Turn  # noqa: E402
from quipu.skills.detect import detect  # noqa: E402

REPEATED = [
    (("git stash", "git pull --rebase origin main", "git stash pop"), "error: cannot pull with rebase: You have unstaged changes.", 40),
    (("pip install -e .", "python -m pytest -q tests"), "ModuleNotFoundError: No module named 'shop'", 25),
    (("npm ci", "npm run build"), "Error: Cannot find module 'vite'", 12),
    (("docker compose down", "docker compose up -d db"), "error: port 5432 is already allocated", 6),
    (("alembic upgrade head", "alembic current"), "FAILED: Can't locate revision identified by '4f2a'", 3),
]


def corpus(sessions: int, per_session: int, repeated: bool, seed: int = 7) -> list[Turn]:
    rng = random.Random(seed)
    plan: dict[int, tuple[tuple[str, ...], str]] = {}
    if repeated:
        for steps, error, count in REPEATED:
            for s in rng.sample(range(sessions), count):
                plan.setdefault(s, (steps, error))
    turns = []
    for s in range(sessions):
        sid = f"{s:08d}-0000-4000-8000-{s:012d}"
        project = f"/home/dev/project{s % 40}"
        for t in range(per_session):
            ts = f"2026-{1 + s % 12:02d}-{1 + s % 28:02d}T{t % 24:02d}:00:00.000Z"
            if t % 2 == 0:
                text = f"Question {t} of session {s} about the orders table and its index?"
                if s in plan and t == 10:
                    text = f"It stopped with: {plan[s][1]}"
            else:
                calls = [f"[Bash: tool{s}x{t}x{k} sub{s}x{k} --flag {k}]" if k % 2 else f"[Read: /srv/p{s}/f{k}.py]"
                         for k in range(rng.randint(3, 6))]
                if s in plan and t == 11:
                    calls = [f"[Bash: {c}]" for c in plan[s][0]]
                text = "Looked at it.\n" + "\n".join(calls) + "\nDone."
            turns.append(Turn(f"{sid}/u{t}", sid, t, "user" if t % 2 == 0 else "assistant", text, ts, project, "main"))
    return turns


def baseline(path: Path) -> None:
    db = index.connect(path)
    try:
        sum(len(text) for (text,) in db.execute("SELECT text FROM turns WHERE role = 'assistant'"))
    finally:
        db.close()


def detection(path: Path) -> list[object]:
    db = index.connect(path)
    try:
        return list(detect(db))
    finally:
        db.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--turns-per-session", type=int, default=70)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR")
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args()
    scratch = C.scratch_dir(args.keep, "skills")
    env = C.isolate(scratch)
    rows = []
    try:
        for name in ("unique", "repeated"):
            layout = Layout(scratch / name / "history")
            layout.root.mkdir(parents=True)
            turns = corpus(args.sessions, args.turns_per_session, name == "repeated")
            index.rebuild(layout, turns)
            base = C.median(C.timed(lambda layout=layout: baseline(layout.index), args.runs))
            found: list[object] = []
            wall = C.median(C.timed(lambda layout=layout, found=found: found.extend(detection(layout.index)) or found.clear(), args.runs))
            found = detection(layout.index)
            store = scratch / name / "store"
            C.Store.init(store)
            home = scratch / name / "quipu-home"
            home.mkdir()
            os.symlink(layout.root, home / "history")
            answers = scratch / name / "answer.py"
            answers.write_text(_MODEL)
            out = scratch / name / "draft.json"
            child = {**env, "QUIPU_HOME": str(home)}
            child.pop("CLAUDECODE", None)
            proc_wall, _rss, status = C.spawn_timed(
                [sys.executable, "-m", "quipu", "--store", str(store), "skills", "draft", "--json", "--max-calls", "0",
                 "--model", f"command:{sys.executable} {answers}"], stdout=str(out), env=child)
            report = json.loads(out.read_text()) if status == 0 else {"model": {"calls": "failed"}, "outcomes": []}
            admitted = sum(o["admitted"] for o in report["outcomes"])
            rows.append((name, f"{len(turns):,}", len(found), f"{wall * 1000:.0f} ms = {wall / base:.1f}x",
                         f"{base * 1000:.0f} ms", f"{proc_wall * 1000:.0f} ms", report["model"]["calls"], admitted))
    finally:
        C.cleanup(scratch, args.keep)
    body = ("Detection in process (median of runs) against reading every reply's text with one SQL query; "
            "`quipu skills draft` as a fresh process with a command model that answers every candidate with "
            "a draft the gate refuses (its failure is not from the sessions).\n\n" + C.table(
                ["corpus", "turns", "candidates", "detection", "baseline: read every reply", "`quipu skills draft`",
                 "model calls", "admitted"], rows))
    print(body)
    if args.write_results:
        C.update_results("skills", "Skills drafted from repeated procedures (issue 19): bench/bench_skills.py", body,
                         command=C.command_line(), machine_line=C.machine())
    return 0


_MODEL = '''import json, sys
request = json.load(sys.stdin)
print(json.dumps({"name": "bench-draft", "description": "A draft.", "failure": "an error nobody saw here",
                  "body": "x" * 300}))
'''

if __name__ == "__main__":
    raise SystemExit(main())
