"""The viewer at a large store: `quipu serve`'s memories page and a search from it, against the same
search as a warm library call in the same run.

A store of ``--size`` memories of real text (bench/realtext.py: each joins two texts of
../shared/data, real notes and LoCoMo turns, read at run time) in one commit, queried with
prompts-dev's real topical prompts, indexed (and its
vectors built, when the embedding is installed) before anything is timed. Then `quipu serve --port 0`
runs as a process, and over plain HTTP (the run's key as a cookie):
- first page: the very first GET of ``/memories`` (the server opens the index), then its p50 warm;
- search: GET ``/memories?q=QUERY`` (the deep list, words and meaning, rendered), p50 of ``--runs``;
each against the deep list for the same query as a warm library call in this process
(``quipu.commands.search.search``, what `quipu search` runs, after one call to warm it), p50, with
the calls interleaved. Goal: the page within 2x the library call.

Usage: python bench/bench_serve.py [--size 100000] [--runs 15] [--write-results]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common as C  # noqa: E402

from quipu.commands.search import search  # noqa: E402
from quipu.index import deep, index, vectors  # noqa: E402
from testing import realistic as R  # noqa: E402
from testing.serve import serving  # noqa: E402

import realtext  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=15, help="requests and library calls timed, each")
    p.add_argument("--keep", metavar="DIR")
    p.add_argument("--write-results", action="store_true")
    args = p.parse_args(argv)
    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-serve")
    C.isolate(scratch)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `quipu search` and `quipu serve` set it
    try:
        body = run(args, scratch)
    finally:
        C.cleanup(scratch, args.keep)
    print(body)
    if args.write_results:
        C.update_results("bench_serve", "The viewer at a large store: bench/bench_serve.py", body,
                         command=C.command_line(), machine_line=machine)
    return 0


def run(args: argparse.Namespace, scratch: Path) -> str:
    data = R.data_dir()
    store, _n = C.bulk_store(scratch / "store", realtext.memories(data, args.size, 21), checkout=False,
                             message="bench: serve")
    start = time.perf_counter()
    index.ensure_fresh(store)
    db = index.connect(index.index_file(store))
    meaning = vectors.ensure_vectors(index.index_file(store).parent, db) is not None
    db.close()
    prepared = time.perf_counter() - start
    queries = [p.text for p in R.real_prompts(data, "topical")[:60] if len(p.text) < 300]
    search(store, "warm up")  # the library call warm: the encoder and the vectors read once

    page_t, search_t, library_t = [], [], []
    with serving(store) as served:
        start = time.perf_counter()
        status, page = served.get("/memories")
        first = time.perf_counter() - start
        assert status == 200 and f"{args.size} memories." in page, page[-500:]
        served.get("/memories?q=warm+up")
        for i in range(args.runs):
            q = queries[i % len(queries)]
            start = time.perf_counter()
            status, page = served.get("/memories")
            page_t.append(time.perf_counter() - start)
            start = time.perf_counter()
            status, shown = served.get("/memories?q=" + urllib.parse.quote_plus(q))
            search_t.append(time.perf_counter() - start)
            assert status == 200, shown[-500:]
            start = time.perf_counter()
            found = search(store, q, limit=2 * deep.GATHER)  # as many as the page asks for
            library_t.append(time.perf_counter() - start)
            assert all(f"/memories/{hit.id}" in shown for hit in found.hits[:10]), q

    lib, pg, sr = C.median(library_t), C.median(page_t), C.median(search_t)
    rows = [
        ["first page of /memories, the server's first request", f"{first * 1000:.0f} ms", f"{first / lib:.2f}x",
         "met" if first <= 2 * lib else "NOT met (goal 2x)"],
        ["first page of /memories, p50 warm", f"{pg * 1000:.1f} ms", f"{pg / lib:.2f}x",
         "met" if pg <= 2 * lib else "NOT met (goal 2x)"],
        ["search from the page (/memories?q=...), p50", f"{sr * 1000:.1f} ms", f"{sr / lib:.2f}x",
         "met" if sr <= 2 * lib else "NOT met (goal 2x)"],
        ["the same search as a warm library call, p50", f"{lib * 1000:.1f} ms", "1.00x", ""],
    ]
    return (f"{args.size:,} memories of real text in one commit (index{' and vectors' if meaning else ''} built first, "
            f"{prepared:.1f} s; meaning search {'on' if meaning else 'off: the embedding is not installed'}); "
            f"p50 of {args.runs} each, interleaved, over HTTP to `quipu serve` on 127.0.0.1.\n\n"
            + C.table(["what", "time", "ratio to the library call", "goal (<= 2x)"], rows))


if __name__ == "__main__":
    raise SystemExit(main())
