"""Benchmark of `quipu import markdown DIR` and of the first search after it, on real text.

The notes are written from ../shared/data/memories-real/notes.jsonl at run time (its notes cycled
to ``--notes``, each copy made unique), a third with YAML frontmatter (title, tags, date), a third
with a heading, a third plain text, in folders of 100. Each round, alternating, the same files go
(a) into a fresh store through `quipu import markdown` as a person runs it (a new process: the
scan, the commit, the index and the meaning vectors), and (b) into a fresh git repository through
`git add -A && git commit` (the floor for one commit of that many files). After each import, the
first `quipu search` (a new process) is timed beside a later one of the same query. Every note must
be found by `quipu list`. Medians of ``--rounds`` rounds, the ratio first.

Goals: the import <= 3x `git add -A && git commit`; the first search after it <= 2x a later one.

Usage: python bench/bench_import.py [--notes 5882] [--rounds 3] [--write-results]
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
GOAL_IMPORT_RATIO = 3.0
GOAL_SEARCH_RATIO = 2.0
QUERY = "how do we run the database migrations before a deploy"


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


def _quipu(env: dict[str, str], store: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "quipu", "--store", str(store), *args], capture_output=True,
                          text=True, env=env, cwd=str(C.REPO))
    return time.perf_counter() - start, done


def _import_round(scratch: Path, folder: Path, env: dict[str, str], n: int) -> tuple[float, float, float, int]:
    """(import seconds, first search, later search, memories listed) for one fresh store; a note the secret
    scanner refuses is listed as skipped, as a person would see it (at most 1 in 100 here)."""
    store_root = scratch / f"store-{n}"
    Store.init(store_root)
    quipu_s, done = _quipu(env, store_root, "import", "markdown", str(folder), "--json")
    if done.returncode not in (0, 4):  # 4: done, with some notes listed as skipped (a secret-like note)
        raise SystemExit(f"bench: the import failed: {done.stderr}")
    report = json.loads(done.stdout)
    first_s, _ = _quipu(env, store_root, "search", QUERY, "--json")
    later_s, _ = _quipu(env, store_root, "search", QUERY, "--json")
    _, listed = _quipu(env, store_root, "list", "--limit", "0", "--json")
    count = len(json.loads(listed.stdout))
    if count != len(report["imported"]) or len(report["skipped"]) > len(report["imported"]) // 100:
        raise SystemExit(f"bench: {count} memories listed, {len(report['imported'])} imported, "
                         f"{len(report['skipped'])} skipped")
    C.cleanup(store_root, None)
    return quipu_s, first_s, later_s, count


def _memory_texts(folder: Path) -> list[str]:
    """The memory files the notes become: what the import's secret scan reads, once per note."""
    from quipu.store import notes
    from quipu.store.memory import render_memory

    return [render_memory(n.memory).decode() for n in notes.scan_folder(folder) if isinstance(n, notes.Note)]


def _scan_alone(texts: list[str]) -> float:
    """Seconds of the secret scan over ``texts``, in this process."""
    from quipu.store import secrets_scan

    start = time.perf_counter()
    for text in texts:
        secrets_scan.find_secrets(text)
    return time.perf_counter() - start


def _git_round(scratch: Path, folder: Path, n: int) -> float:
    repo = scratch / f"plain-git-{n}"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["cp", "-r", str(folder), str(repo / "notes")], check=True)
    start = time.perf_counter()
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "notes"], check=True)
    seconds = time.perf_counter() - start
    C.cleanup(repo, None)
    return seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--notes", type=int, default=5882, help="how many notes (default 5,882)")
    p.add_argument("--rounds", type=int, default=3, help="rounds, each an import and a plain git commit (default 3)")
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
        texts = _memory_texts(folder)
        imports, gits, firsts, laters, scans = [], [], [], [], []
        count = 0
        for n in range(args.rounds):  # alternated, the order flipped each round: the machine is shared
            if n % 2:
                gits.append(_git_round(scratch, folder, n))
            quipu_s, first_s, later_s, count = _import_round(scratch, folder, env, n)
            imports.append(quipu_s)
            firsts.append(first_s)
            laters.append(later_s)
            if not n % 2:
                gits.append(_git_round(scratch, folder, n))
            scans.append(_scan_alone(texts))
        imp, git, first, later, scan_s = (C.median(v) for v in (imports, gits, firsts, laters, scans))
        ratio, search_ratio = imp / git, first / later
        body = (
            f"{args.notes:,} notes written from memories-real (a third with frontmatter, a third with a heading, "
            f"a third plain); medians of {args.rounds} alternated rounds.\n\n"
            + C.table(["what", "ratio", "median s", "rounds s"], [
                ["`quipu import markdown DIR` (process, scan, commit, index, vectors) vs `git add -A && git commit`",
                 f"{ratio:.1f}x", f"{imp:.2f}", " ".join(f"{v:.2f}" for v in imports)],
                ["of the import: the secret scan alone, once per note, in process", f"{scan_s / git:.1f}x",
                 f"{scan_s:.2f}", f"{scan_s / imp:.0%} of the import; rounds " + " ".join(f"{v:.2f}" for v in scans)],
                ["`git add -A && git commit` of the same files", "1.0x", f"{git:.2f}", " ".join(f"{v:.2f}" for v in gits)],
                ["first `quipu search` after the import vs a later one", f"{search_ratio:.2f}x", f"{first:.3f}",
                 " ".join(f"{v:.3f}" for v in firsts)],
                ["a later `quipu search`", "1.0x", f"{later:.3f}", " ".join(f"{v:.3f}" for v in laters)],
            ])
            + f"\n\n- {count:,} memories in the store after each import, in one commit.\n"
            + f"- import <= {GOAL_IMPORT_RATIO:g}x git: " + ("met" if ratio <= GOAL_IMPORT_RATIO else "NOT met")
            + f"; first search <= {GOAL_SEARCH_RATIO:g}x a later one: "
            + ("met" if search_ratio <= GOAL_SEARCH_RATIO else "NOT met") + "\n"
        )
        print(body)
        if args.write_results:
            C.update_results("bench_import", "Importing a folder of markdown notes, and the first search after it",
                             body, command=C.command_line(), machine_line=machine_line)
    finally:
        C.cleanup(scratch, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
