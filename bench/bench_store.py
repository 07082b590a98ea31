"""Benchmark of the store and its index (issue 2), each figure beside a git CLI baseline from the same run.

(a) single-writer commits/s into a store already holding N memories: ``Store.add`` in one process,
    beside ``git add <file> && git commit`` (two git processes per memory) on a copy of the same
    store; run in alternating chunks so both see the same machine noise. Goal >= 200 commits/s.
    Also ``quipu add`` as a whole CLI process per memory (interpreter + imports + index refresh).
(b) P processes x M concurrent writes (``Store.add``) beside P processes x M ``git add && git
    commit``: wall time from a common start signal, commits/s together, lost writes, ``git status``
    and ``git fsck``. Goal: 0 lost, >= 100 commits/s together.
(c) full index rebuild of N memories (``index.ensure_fresh(force_rebuild=True)``) beside reading the
    same memories with the git CLI (``ls-tree -r`` + ``cat-file --batch``), a plain Python loop over
    the working tree, and the least an FTS5 index of those files costs. Goal <= 2 s.
(d) incremental index refresh after one new commit beside the full rebuild. Goal <= 30 ms.

Usage: python bench/bench_store.py [--memories 10000] [--commits 300] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.index import index  # noqa: E402
from quipu.store.memory import Memory, parse_memory, render_memory  # noqa: E402
from quipu.store.store import Store  # noqa: E402

GOAL_COMMITS = 200.0
GOAL_CONCURRENT = 100.0
GOAL_REBUILD_S = 2.0
GOAL_REFRESH_MS = 30.0


# ------------------------------------------------------------------ workers for (b)


def worker(mode: str, root: str, worker_id: int, count: int) -> int:
    """One concurrent writer: prepare, print 'ready', wait for 'go' on stdin, write, report JSON."""
    corpus = C.Corpus(seed=10_000 + worker_id, vocab=3000)
    memories = corpus.memories(count)
    payloads = [(m, render_memory(m)) for m in memories]
    store = Store(Path(root))
    if mode == "quipu":
        store.repo  # open the repository before the start signal  # noqa: B018
    print("ready", flush=True)
    sys.stdin.readline()
    ok = errors = 0
    samples: list[str] = []
    start = time.perf_counter()
    for item, data in payloads:
        try:
            if mode == "quipu":
                store.add(item)
            else:
                full = os.path.join(root, item.path)
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "wb") as fh:
                    fh.write(data)
                for argv in (["git", "add", item.path], ["git", "commit", "-q", "-m", f"add {item.id}"]):
                    done = subprocess.run(argv, cwd=root, capture_output=True, text=True)
                    if done.returncode != 0:
                        raise RuntimeError(f"{argv[1]}: {(done.stderr or done.stdout).strip().splitlines()[:1]}")
            ok += 1
        except Exception as exc:  # noqa: BLE001 - a failed write is what we count
            errors += 1
            if len(samples) < 3:
                samples.append(f"{type(exc).__name__}: {exc}"[:160])
    print(json.dumps({"ok": ok, "errors": errors, "samples": samples, "seconds": time.perf_counter() - start,
                      "paths": [m.path for m in memories]}), flush=True)
    return 0


def run_concurrent(mode: str, root: Path, procs: int, per_proc: int) -> dict[str, object]:
    before = int(C_git(root, "rev-list", "--count", "HEAD"))
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", mode, "--store", str(root), "--worker-id", str(k),
             "--count", str(per_proc)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        for k in range(procs)
    ]
    for child in children:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise SystemExit("bench: a worker failed to start")
    start = time.perf_counter()
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
        child.stdin.close()
    reports = []
    for child in children:
        assert child.stdout is not None
        out = child.stdout.read()
        child.wait()
        reports.append(json.loads(out.strip().splitlines()[-1]))
    wall = time.perf_counter() - start
    after = int(C_git(root, "rev-list", "--count", "HEAD"))
    tree = set(C_git(root, "ls-tree", "-r", "--name-only", "HEAD", "memories").split("\n"))
    expected = [p for r in reports for p in r["paths"]]
    present = sum(1 for p in expected if p in tree)
    status = C_git(root, "status", "--porcelain", "--untracked-files=all")
    fsck = subprocess.run(["git", "-C", str(root), "fsck", "--no-progress", "--no-dangling"],
                          capture_output=True, text=True)
    samples = [s for r in reports for s in r["samples"]][:3]
    return {
        "wall": wall,
        "commits": after - before,
        "expected": len(expected),
        "present": present,
        "lost": len(expected) - present,
        "errors": sum(r["errors"] for r in reports),
        "dirty": len([line for line in status.splitlines() if line.strip()]),
        "fsck": fsck.returncode == 0 and not fsck.stdout.strip(),
        "samples": samples,
    }


def cli_problem() -> str | None:
    """None when `python -m quipu` runs here, else the last line of its error (the CLI rows are then skipped)."""
    done = subprocess.run([sys.executable, "-m", "quipu", "--help"], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"


def C_git(root: Path, *args: str) -> str:  # noqa: N802 - a tiny helper
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


# ------------------------------------------------------------------ (a) single writer


def git_cli_commit(root: Path, item: Memory, data: bytes) -> None:
    full = root / item.path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_bytes(data)
    subprocess.run(["git", "add", item.path], cwd=root, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-q", "-m", f"quipu: add {item.id}"], cwd=root, check=True, capture_output=True)


def git_index_costs(root: Path, repeat: int = 20) -> tuple[int, int, int, float, float, float]:
    """(entries, bytes, version, ms to read(True) and ms to write() through libgit2, ms to serialize
    the same index kept as bytes by quipu.store.gitindex) of the store's git index, each measured alone."""
    import pygit2

    from quipu.store.gitindex import IndexFile

    repo = pygit2.Repository(str(root))
    index_file = Path(repo.path) / "index"
    data = index_file.read_bytes()
    idx = repo.index
    reads = C.timed(lambda: idx.read(True), repeat)
    writes = C.timed(idx.write, repeat)
    kept = IndexFile.parse(data)
    splices = C.timed(kept.serialize, repeat)
    version = int.from_bytes(data[4:8], "big")
    return len(idx), len(data), version, C.median(reads) * 1000, C.median(writes) * 1000, C.median(splices) * 1000


def single_writer(base: Path, scratch: Path, commits: int, chunks: int, cli_adds: int) -> list[list[object]]:
    quipu_root = scratch / "a-quipu"
    git_root = scratch / "a-git"
    C.copy_store(base, quipu_root)
    C.copy_store(base, git_root)
    corpus = C.Corpus(seed=99, vocab=3000)
    memories = corpus.memories(commits)
    payloads = [(m, render_memory(m)) for m in memories]
    store = Store(quipu_root)
    per_chunk = max(1, commits // chunks)
    t_quipu = t_git = 0.0
    for n in range(0, commits, per_chunk):
        part = payloads[n : n + per_chunk]
        start = time.perf_counter()
        for item, _data in part:
            store.add(item)
        t_quipu += time.perf_counter() - start
        start = time.perf_counter()
        for item, data in part:
            git_cli_commit(git_root, item, data)
        t_git += time.perf_counter() - start
    for root in (quipu_root, git_root):
        if C_git(root, "status", "--porcelain"):
            print(f"bench: warning: git status of {root} is not clean", file=sys.stderr)
    q_rate, g_rate = commits / t_quipu, commits / t_git
    git_index = git_index_costs(quipu_root)
    rows = [
        ["`Store.add` (one process)", commits, f"{t_quipu * 1000 / commits:.2f}", f"{q_rate:.0f}",
         f"{q_rate / g_rate:.2f}x", "met" if q_rate >= GOAL_COMMITS else "**not met**"],
        ["`git add` + `git commit` CLI (baseline)", commits, f"{t_git * 1000 / commits:.2f}", f"{g_rate:.0f}", "1.00x", ""],
        [f"part: git's index ({git_index[0]:,} entries, {git_index[1] / 1e6:.2f} MB, version {git_index[2]}) read and "
         "written by libgit2, as a write after another process's write does, measured alone", "",
         f"{git_index[3] + git_index[4]:.2f}", "", "", ""],
        ["part: the same index kept as bytes, spliced and written with OpenSSL's SHA-1, as each write of a "
         "run from one process does (quipu.store.gitindex), measured alone", "", f"{git_index[5]:.2f}", "", "",
         f"{git_index[5] / (t_quipu * 1000 / commits):.0%} of a `Store.add`"],
    ]
    problem = cli_problem() if cli_adds else None
    if problem:
        rows.append(["`quipu add` CLI, a process per memory", "skipped", "", "", "", f"the CLI failed: `{problem}`"])
    elif cli_adds:
        # A whole `quipu add` process per memory (interpreter, imports, commit, index refresh),
        # interleaved with the same number of git CLI commits for a like-for-like ratio.
        extra = corpus.memories(cli_adds * 2)
        index.ensure_fresh(Store(quipu_root))  # the library commits above must not be billed to the CLI
        t_cli = t_git2 = 0.0
        for k in range(cli_adds):
            item = extra[2 * k]
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "quipu", "--store", str(quipu_root), "add", item.body, "-t", item.title,
                 "--id", item.id], check=True, capture_output=True,
            )
            t_cli += time.perf_counter() - start
            other = extra[2 * k + 1]
            start = time.perf_counter()
            git_cli_commit(git_root, other, render_memory(other))
            t_git2 += time.perf_counter() - start
        rows.append(["`quipu add` CLI, a process per memory (incl. index refresh)", cli_adds,
                     f"{t_cli * 1000 / cli_adds:.1f}", f"{cli_adds / t_cli:.0f}", f"{t_git2 / t_cli:.2f}x", ""])
    return rows


# ------------------------------------------------------------------ (c) rebuild and (d) refresh


def read_with_git_cli(root: Path) -> int:
    listing = subprocess.run(["git", "-C", str(root), "ls-tree", "-r", "HEAD", "memories"],
                             capture_output=True, check=True).stdout
    oids = b"".join(line.split()[2] + b"\n" for line in listing.splitlines())
    out = subprocess.run(["git", "-C", str(root), "cat-file", "--batch"], input=oids, capture_output=True, check=True)
    return len(out.stdout)


def read_worktree(root: Path) -> list[tuple[str, bytes]]:
    out = []
    for shard in os.scandir(root / "memories"):
        if shard.is_dir():
            for entry in os.scandir(shard.path):
                if entry.name.endswith(".md"):
                    with open(entry.path, "rb") as fh:
                        out.append((entry.path, fh.read()))
    return out


def plain_fts(root: Path, target: Path) -> int:
    """Read the files and index their raw text in the simplest FTS5 table: the floor for any index."""
    files = read_worktree(root)
    target.unlink(missing_ok=True)
    db = sqlite3.connect(str(target), isolation_level=None)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(path, text, tokenize='porter unicode61')")
    db.execute("BEGIN")
    db.executemany("INSERT INTO t VALUES (?, ?)", ((p, d.decode("utf-8")) for p, d in files))
    db.execute("COMMIT")
    db.close()
    return len(files)


def rebuild_rows(base: Path, scratch: Path, repeat: int) -> tuple[list[list[object]], float]:
    store = Store(base)
    quipu_times = C.timed(lambda: index.ensure_fresh(Store(base), force_rebuild=True), repeat)
    pygit2_read = C.timed(lambda: sum(1 for _ in store.iter_memory_files()), repeat)
    pygit2_parse = C.timed(lambda: [parse_memory(d, p) for p, d in store.iter_memory_files()], repeat)
    git_cli = C.timed(lambda: read_with_git_cli(base), repeat)
    py_read = C.timed(lambda: read_worktree(base), repeat)
    fts = C.timed(lambda: plain_fts(base, scratch / "plain-fts.sqlite"), repeat)
    q = C.median(quipu_times)

    def row(name: str, times: list[float], goal: str = "") -> list[object]:
        m = C.median(times)
        return [name, f"{m * 1000:.0f}", f"{min(times) * 1000:.0f}", f"{q / m:.2f}x", goal]

    rows = [
        row("quipu full rebuild (`ensure_fresh(force_rebuild=True)`)", quipu_times,
            "met" if q <= GOAL_REBUILD_S else "**not met**"),
        row("git CLI: `ls-tree -r` + `cat-file --batch` of every memory blob", git_cli),
        row("plain Python: read every working-tree file", py_read),
        row("plain Python: read files + one-column FTS5 (porter) of the raw text", fts),
        row("quipu part: read every blob with pygit2", pygit2_read),
        row("quipu part: read + `parse_memory` every blob", pygit2_parse),
    ]
    return rows, q


def refresh_rows(base: Path, repeat: int, rebuild_s: float, cli_repeat: int) -> list[list[object]]:
    corpus = C.Corpus(seed=123, vocab=3000)
    store = Store(base)
    index.ensure_fresh(store)
    incremental: list[float] = []
    fresh: list[float] = []
    actions = set()
    for item in corpus.memories(repeat):
        store.add(item)
        start = time.perf_counter()
        result = index.ensure_fresh(Store(base))
        incremental.append(time.perf_counter() - start)
        actions.add(result.action)
        start = time.perf_counter()
        index.ensure_fresh(Store(base))
        fresh.append(time.perf_counter() - start)
    if actions != {"incremental"}:
        print(f"bench: warning: refresh actions were {sorted(actions)}", file=sys.stderr)
    cli: list[float] = []
    bare: list[float] = []
    problem = cli_problem() if cli_repeat else None
    for item in corpus.memories(0 if problem else cli_repeat):
        store.add(item)
        cli.append(C.spawn_timed([sys.executable, "-m", "quipu", "--store", str(base), "index", "--refresh", "--quiet"])[0])
        bare.append(C.spawn_timed([sys.executable, "-c", "pass"])[0])
    inc = C.median(incremental)
    rows = [
        ["incremental refresh after one `Store.add` commit", f"{inc * 1000:.1f}", f"{max(incremental) * 1000:.1f}",
         f"{rebuild_s / inc:.0f}x faster than the rebuild", "met" if inc * 1000 <= GOAL_REFRESH_MS else "**not met**"],
        ["no-op check (index already at HEAD)", f"{C.median(fresh) * 1000:.2f}", f"{max(fresh) * 1000:.2f}", "", ""],
        ["full rebuild (from (c), baseline)", f"{rebuild_s * 1000:.0f}", "", "1x", ""],
    ]
    if problem:
        rows.append(["`quipu index --refresh` as a process", "skipped", "", f"the CLI failed: `{problem}`", ""])
    elif cli_repeat:
        rows.append(["`quipu index --refresh` as a process after one commit (what the git hook runs)",
                     f"{C.median(cli) * 1000:.0f}", f"{max(cli) * 1000:.0f}",
                     f"`python -c pass` (same venv) {C.median(bare) * 1000:.0f} ms", ""])
    return rows


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--memories", type=int, default=10_000, help="memories already in the store (default 10000)")
    p.add_argument("--commits", type=int, default=300, help="single-writer commits for each side of (a)")
    p.add_argument("--chunks", type=int, default=3, help="alternate quipu/git in this many chunks in (a)")
    p.add_argument("--cli-adds", type=int, default=20, help="`quipu add` CLI processes in (a); 0 skips")
    p.add_argument("--procs", type=int, default=20, help="concurrent writer processes in (b)")
    p.add_argument("--per-proc", type=int, default=50, help="writes per process in (b)")
    p.add_argument("--rebuilds", type=int, default=3, help="repeats of each rebuild measurement in (c)")
    p.add_argument("--refreshes", type=int, default=10, help="incremental refreshes in (d)")
    p.add_argument("--cli-refreshes", type=int, default=5, help="`quipu index --refresh` processes in (d); 0 skips")
    p.add_argument("--only", default="abcd", help="which parts to run, e.g. 'cd'")
    p.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder, removed)")
    p.add_argument("--write-results", action="store_true", help="update the bench_store section of bench/RESULTS.md")
    p.add_argument("--worker", choices=("quipu", "git"), help=argparse.SUPPRESS)
    p.add_argument("--store", help=argparse.SUPPRESS)
    p.add_argument("--worker-id", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, default=50, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.store, args.worker_id, args.count)

    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-store")
    C.isolate(scratch)
    C.compile_quipu()  # timed quipu processes read bytecode, as installed from a wheel
    sections: list[str] = []
    try:
        base = scratch / "base"
        start = time.perf_counter()
        _store, count = C.bulk_store(base, C.Corpus(seed=1).memories(args.memories))
        index.ensure_fresh(Store(base))
        print(f"bench: built a store of {count} memories in {time.perf_counter() - start:.1f} s at {base}",
              file=sys.stderr)
        copies = {}
        for name in ("b-quipu", "b-git"):
            if "b" in args.only:
                copies[name] = C.copy_store(base, scratch / name).root

        rebuild_s = None
        if "c" in args.only or "d" in args.only:
            rows, rebuild_s = rebuild_rows(base, scratch, args.rebuilds)
            if "c" in args.only:
                sections.append(
                    f"### (c) Full index rebuild of {count:,} memories (median of {args.rebuilds})\n\n"
                    + C.table(["what", "median ms", "best ms", "quipu time / this", "goal <= 2 s"], rows)
                    + f"\n\nReading: the rebuild takes {rebuild_s:.2f} s "
                    + ("(goal met)." if rebuild_s <= GOAL_REBUILD_S else "(goal NOT met).")
                    + " The last two rows are parts of quipu's rebuild, to show where its time goes."
                )
        if "d" in args.only:
            rows = refresh_rows(base, args.refreshes, rebuild_s or 1.0, args.cli_refreshes)
            sections.append(
                f"### (d) Incremental index refresh after one new commit ({args.refreshes} refreshes)\n\n"
                + C.table(["what", "median ms", "max ms", "compared", "goal <= 30 ms"], rows)
                + f"\n\nReading: {rows[0][0]} takes {rows[0][1]} ms (median), {rows[0][3]}."
            )
        if "a" in args.only:
            rows = single_writer(base, scratch, args.commits, args.chunks, args.cli_adds)
            sections.insert(
                0,
                f"### (a) Single writer into a store holding {count:,} memories ({args.commits} commits each side, "
                f"alternated in {args.chunks} chunks)\n\n"
                + C.table(["writer", "commits", "ms/commit", "commits/s", "vs git CLI", "goal >= 200/s"], rows)
                + f"\n\nReading: `Store.add` commits {rows[0][3]}/s, {rows[0][4]} the git CLI doing the same work.",
            )
        if "b" in args.only:
            results = {}
            for mode in ("quipu", "git"):
                results[mode] = run_concurrent(mode, copies[f"b-{mode}"], args.procs, args.per_proc)
            rows = []
            for mode, label in (("quipu", "quipu `Store.add`"), ("git", "`git add` + `git commit` CLI (baseline)")):
                r = results[mode]
                rate = float(r["commits"]) / float(r["wall"])  # type: ignore[arg-type]
                ok = mode == "git" or (r["lost"] == 0 and rate >= GOAL_CONCURRENT)
                rows.append([label, r["expected"], f"{r['wall']:.2f}", r["commits"], f"{rate:.0f}", r["present"],
                             r["lost"], r["errors"], r["dirty"], "yes" if r["fsck"] else "no",
                             ("met" if ok else "**not met**") if mode == "quipu" else ""])
            q, g = results["quipu"], results["git"]
            q_rate = float(q["commits"]) / float(q["wall"])  # type: ignore[arg-type]
            g_rate = float(g["commits"]) / float(g["wall"])  # type: ignore[arg-type]
            sample = "; ".join(str(s) for s in g["samples"])  # type: ignore[union-attr]
            sections.insert(
                1 if "a" in args.only else 0,
                f"### (b) {args.procs} processes x {args.per_proc} concurrent writes into copies of the same store\n\n"
                + C.table(["writers", "writes tried", "wall s", "commits", "commits/s", "memories present", "lost",
                           "errors", "`git status` entries", "`git fsck` clean", "goal: 0 lost, >= 100/s"], rows)
                + f"\n\nReading: quipu {q_rate:.0f} commits/s with {q['lost']} lost ({q_rate / g_rate:.2f}x the git "
                f"CLI's {g_rate:.0f}/s, which lost {g['lost']} of {g['expected']})."
                + (f" Git CLI failures look like: `{sample}`." if sample else ""),
            )
        body = "\n\n".join(sections)
        print(body)
        if args.write_results:
            C.update_results("bench_store", "Store and index (issue 2): bench/bench_store.py", body,
                             command=C.command_line(), machine_line=machine)
    finally:
        C.cleanup(scratch, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
