"""Benchmark of `quipu import markdown DIR` and of the first search after it, on real text.

The notes are written at run time, a third with YAML frontmatter (title, tags, date), a third with
a heading, a third plain text, in folders of 100: below 50,000 notes from
../shared/data/memories-real/notes.jsonl (its notes cycled to ``--notes``, each copy made unique);
from 50,000 on, real text as bench/realtext.py joins it (each note a real note and a LoCoMo turn,
or two real notes). Each round the same files go into a fresh store through `quipu import
markdown` as a person runs it (a new process: the scan, the commit, the index and the meaning
vectors; its peak RSS is recorded), against a baseline in the same run (``--against``):
- ``git`` (the default below 50,000 notes): alternated, into a fresh git repository through
  `git add -A && git commit` (the floor for one commit of that many files);
- ``rebuild`` (the default from 50,000): `quipu index --rebuild` of the store the import made
  (a new process, right after it; SQLite's full rebuild from git, without the meaning vectors).
After each import, the first `quipu search` (a new process) is timed beside a later one of the same
query. Every note must be found by `quipu list`. Medians of ``--rounds`` rounds, the ratio first.

Goals: the import <= 3x `git add -A && git commit` (5,882 notes), <= 3x `quipu index --rebuild`
(100,000 notes); the first search after it <= 2x a later one.

The disk's queued writes are flushed (``sync``) before each timed step, and no store is removed
until the run ends. Run it when no large folder was removed in the last five minutes: ext4 then
skips each recently freed inode as it creates a file (its ``recently_deleted`` check, a read of
the inode table each), and creating the import's 100,000 worktree files takes several times as
long (measured: 20,000 files in 3.7-5.8 s of kernel time against under a second otherwise),
while the rebuild it is compared with creates one file.

Usage: python bench/bench_import.py [--notes 5882] [--rounds 3] [--against git|rebuild] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.store.store import Store  # noqa: E402
from testing import realistic as R  # noqa: E402

import realtext  # noqa: E402

DATA = C.REPO.parent / "shared" / "data" / "memories-real" / "notes.jsonl"
GOAL_IMPORT_RATIO = 3.0
GOAL_SEARCH_RATIO = 2.0
REAL_TEXT_FROM = 50_000  # notes from which the folder is bench/realtext.py's real text, against a rebuild
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


def _quipu(env: dict[str, str], store: Path, *args: str, out: Path | None = None) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in KiB, stdout) of one `quipu` process; its exit status must be 0 or 4."""
    sink = out or store.with_name(store.name + ".out")
    wall, rss, code = C.spawn_timed([sys.executable, "-m", "quipu", "--store", str(store), *args], stdout=str(sink),
                                    env=env, cwd=str(C.REPO))
    if code not in (0, 4):  # 4: done, with some notes listed as skipped (a secret-like note)
        raise SystemExit(f"bench: quipu {' '.join(args)} exited {code}")
    return wall, rss, sink.read_text(encoding="utf-8")


def _import_round(scratch: Path, folder: Path, env: dict[str, str], n: int,
                  rebuild: bool) -> tuple[float, float, float, int, float, int]:
    """(import seconds, first search, later search, memories listed, `index --rebuild` seconds or 0,
    the import's peak RSS in KiB) for one fresh store; a note the secret scanner refuses is listed
    as skipped, as a person would see it (at most 1 in 100 here)."""
    store_root = scratch / f"store-{n}"
    Store.init(store_root)
    os.sync()  # the disk's queued writes (the notes just written) flushed before a timed step
    quipu_s, rss, out = _quipu(env, store_root, "import", "markdown", str(folder), "--json")
    report = json.loads(out)
    first_s, _, _ = _quipu(env, store_root, "search", QUERY, "--json")
    later_s, _, _ = _quipu(env, store_root, "search", QUERY, "--json")
    _, _, listed = _quipu(env, store_root, "list", "--limit", "0", "--json")
    count = len(json.loads(listed))
    if count != len(report["imported"]) or len(report["skipped"]) > len(report["imported"]) // 100:
        raise SystemExit(f"bench: {count} memories listed, {len(report['imported'])} imported, "
                         f"{len(report['skipped'])} skipped")
    os.sync()
    rebuild_s = _quipu(env, store_root, "index", "--rebuild", "--json")[0] if rebuild else 0.0
    return quipu_s, first_s, later_s, count, rebuild_s, rss


def _memory_texts(folder: Path) -> list[tuple[bytes, dict[str, str]]]:
    """The memory files the notes become and the fields each is made from: what the import's
    secret scan reads, each byte once."""
    from quipu.store import notes
    from quipu.store.memory import render_memory
    from quipu.store.store import memory_fields

    return [(render_memory(n.memory), memory_fields(n.memory)) for n in notes.scan_folder(folder)
            if isinstance(n, notes.Note)]


def _scan_alone(texts: list[tuple[bytes, dict[str, str]]]) -> float:
    """Seconds of the import's secret scan of ``texts`` (``scanned.rendered_holds_secret``), in this process."""
    from quipu.store import scanned

    scanned._CLEAN.clear()  # nothing remembered from an earlier round
    start = time.perf_counter()
    for data, fields in texts:
        scanned.rendered_holds_secret(data, fields, marker=True)
    return time.perf_counter() - start


def _git_round(scratch: Path, folder: Path, n: int) -> float:
    repo = scratch / f"plain-git-{n}"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["cp", "-r", str(folder), str(repo / "notes")], check=True)
    os.sync()
    start = time.perf_counter()
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "notes"], check=True)
    seconds = time.perf_counter() - start
    return seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--notes", type=int, default=5882, help="how many notes (default 5,882)")
    p.add_argument("--rounds", type=int, default=3, help="rounds, each an import and its baseline (default 3)")
    p.add_argument("--against", choices=("git", "rebuild"),
                   help=f"the baseline (default: git below {REAL_TEXT_FROM:,} notes, rebuild from there)")
    p.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder, removed)")
    p.add_argument("--write-results", action="store_true", help="update the bench_import section of bench/RESULTS.md")
    args = p.parse_args(argv)
    against = args.against or ("rebuild" if args.notes >= REAL_TEXT_FROM else "git")
    machine_line = C.machine()
    scratch = C.scratch_dir(args.keep, "import")
    env = C.isolate(scratch)
    C.compile_quipu()  # timed quipu processes read bytecode, as installed from a wheel
    try:
        folder = scratch / "notes"
        if args.notes >= REAL_TEXT_FROM:
            realtext.write_notes(R.data_dir(), folder, args.notes, seed=args.notes)
            source = "bench/realtext.py's real text (a real note and a LoCoMo turn, or two real notes)"
        else:
            write_notes(folder, args.notes)
            source = "memories-real"
        texts = _memory_texts(folder)
        imports, bases, firsts, laters, scans, rss = [], [], [], [], [], []
        count = 0
        for n in range(args.rounds):  # alternated, the order flipped each round: the machine is shared
            if against == "git" and n % 2:
                bases.append(_git_round(scratch, folder, n))
            quipu_s, first_s, later_s, count, rebuild_s, peak = _import_round(scratch, folder, env, n,
                                                                             against == "rebuild")
            imports.append(quipu_s)
            firsts.append(first_s)
            laters.append(later_s)
            rss.append(peak)
            if against == "rebuild":
                bases.append(rebuild_s)
            elif not n % 2:
                bases.append(_git_round(scratch, folder, n))
            scans.append(_scan_alone(texts))
        imp, base, first, later, scan_s = (C.median(v) for v in (imports, bases, firsts, laters, scans))
        ratio, search_ratio = imp / base, first / later
        base_what = ("`git add -A && git commit` of the same files" if against == "git"
                     else "`quipu index --rebuild` of the store the import made")
        body = (
            f"{args.notes:,} notes written from {source} (a third with frontmatter, a third with a heading, "
            f"a third plain); medians of {args.rounds} rounds"
            + (", alternated" if against == "git" else ", each import followed by the rebuild of its store")
            + f"; load average at the start {os.getloadavg()[0]:.1f}.\n\n"
            + C.table(["what", "ratio", "median s", "rounds s"], [
                [f"`quipu import markdown DIR` (process, scan, commit, index, vectors) vs {base_what}",
                 f"{ratio:.1f}x", f"{imp:.2f}", " ".join(f"{v:.2f}" for v in imports)],
                ["of the import: the secret scan alone (each byte of each note once), in process", f"{scan_s / base:.1f}x",
                 f"{scan_s:.2f}", f"{scan_s / imp:.0%} of the import; rounds " + " ".join(f"{v:.2f}" for v in scans)],
                [base_what, "1.0x", f"{base:.2f}", " ".join(f"{v:.2f}" for v in bases)],
                ["first `quipu search` after the import vs a later one", f"{search_ratio:.2f}x", f"{first:.3f}",
                 " ".join(f"{v:.3f}" for v in firsts)],
                ["a later `quipu search`", "1.0x", f"{later:.3f}", " ".join(f"{v:.3f}" for v in laters)],
            ])
            + f"\n\n- {count:,} memories in the store after each import, in one commit; the import's peak RSS "
            + f"{max(rss) / 1024:.0f} MB.\n"
            + f"- import <= {GOAL_IMPORT_RATIO:g}x {'git' if against == 'git' else 'the rebuild'}: "
            + ("met" if ratio <= GOAL_IMPORT_RATIO else "NOT met")
            + f"; first search <= {GOAL_SEARCH_RATIO:g}x a later one: "
            + ("met" if search_ratio <= GOAL_SEARCH_RATIO else "NOT met") + "\n"
        )
        print(body)
        if args.write_results:
            section = "bench_import" if against == "git" else "bench_import_rebuild"
            C.update_results(section, "Importing a folder of markdown notes, and the first search after it"
                             + ("" if against == "git" else f": {args.notes:,} notes against a rebuild"),
                             body, command=C.command_line(), machine_line=machine_line)
    finally:
        C.cleanup(scratch, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
