"""Benchmark of `quipu import markdown DIR`: a folder of 5,882 notes into a store, in one commit.

The notes are written from ../shared/data/memories-real/notes.jsonl at run time (its 1,797 notes
cycled, each copy made unique), a third with YAML frontmatter (title, tags, date), a third with a
heading, a third plain text, in folders of 100. Beside it, in the same run, the same files go into
a fresh git repository through `git add -A && git commit` (the floor for one commit of that many
files). The import is the whole command as a person runs it: a new process, the commit, and the
index brought up to date afterwards; every note must then be found by `quipu list`.

Goal: 5,882 notes in at most 10 s.

Usage: python bench/bench_import.py [--notes 5882] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.store.store import Store  # noqa: E402

DATA = C.REPO.parent / "shared" / "data" / "memories-real" / "notes.jsonl"
GOAL_SECONDS = 10.0


def write_notes(folder: Path, count: int) -> None:
    source = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    for n in range(count):
        note = source[n % len(source)]
        title = " ".join(str(note.get("title") or "note").split())[:80] or "note"
        body = f"{note.get('body') or title}\n\n(copy {n})\n"
        path = folder / f"part-{n // 100:03d}" / f"note-{n:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        if n % 3 == 0:
            text = f"---\ntitle: {json.dumps(title)}\ntags: [imported, part-{n // 100}]\ndate: 2026-01-{n % 28 + 1:02d}\n---\n{body}"
        elif n % 3 == 1:
            text = f"# {title}\n\n{body}"
        else:
            text = body
        path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--notes", type=int, default=5882, help="how many notes (default 5,882)")
    p.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder, removed)")
    p.add_argument("--write-results", action="store_true", help="update the bench_import section of bench/RESULTS.md")
    args = p.parse_args(argv)
    machine_line = C.machine()
    scratch = C.scratch_dir(args.keep, "import")
    env = C.isolate(scratch)
    C.compile_quipu()  # timed quipu processes read bytecode, as installed from a wheel
    try:
        folder = scratch / "notes"
        write_notes(folder, args.notes)
        store_root = scratch / "store"
        Store.init(store_root)

        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "quipu", "--store", str(store_root), "import", "markdown",
                               str(folder), "--json"], capture_output=True, text=True, env=env, cwd=str(C.REPO))
        quipu_s = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"bench: the import failed: {done.stderr}")
        report = json.loads(done.stdout)
        listed = subprocess.run([sys.executable, "-m", "quipu", "--store", str(store_root), "list", "--limit", "0", "--json"],
                                capture_output=True, text=True, env=env, cwd=str(C.REPO))
        count = len(json.loads(listed.stdout))
        if count != len(report["imported"]) or report["skipped"]:
            raise SystemExit(f"bench: {count} memories listed, {len(report['imported'])} imported, "
                             f"{len(report['skipped'])} skipped")

        repo = scratch / "plain-git"
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(["cp", "-r", str(folder), str(repo / "notes")], check=True)
        start = time.perf_counter()
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "notes"], check=True)
        git_s = time.perf_counter() - start

        body = (
            f"{args.notes:,} notes written from memories-real (a third with frontmatter, a third with a heading, "
            "a third plain).\n\n"
            + C.table(["what", "seconds", "vs git add && git commit"], [
                ["`quipu import markdown DIR` (process, commit, index)", f"{quipu_s:.2f}", f"{quipu_s / git_s:.1f}x"],
                ["`git add -A && git commit` of the same files", f"{git_s:.2f}", "1.0x"],
            ])
            + f"\n\n- {count:,} memories in the store afterwards, in one commit; goal <= {GOAL_SECONDS:g} s: "
            + ("met" if quipu_s <= GOAL_SECONDS else "NOT met") + "\n"
        )
        print(body)
        if args.write_results:
            C.update_results("bench_import", "Importing a folder of markdown notes (issue 12)", body,
                             command=C.command_line(), machine_line=machine_line)
    finally:
        C.cleanup(scratch, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
