"""The deep list's costs (issue 15): vectors built with the index, kept up by each commit, and
`quipu search` as a fresh process beside `python -c "import numpy"`.

A store of ``--size`` synthetic memories (bench/_common.py's Corpus: made-up Zipf words, so the
embedding sees unknown words split into pieces, as it would see identifiers) in one commit, eight
to a session as captured memories come, so a search pays for reading the threads around its hits.
- build: ``index.ensure_fresh(force_rebuild=True)`` then ``vectors.ensure_vectors`` from nothing
  (median of ``--repeat``); goal: both together <= 3 s at 10,000.
- incremental: one ``Store.add``, then the index refresh and the vectors update it causes
  (median of ``--commits`` commits); goal <= 50 ms.
- search: ``python -m quipu search QUERY --json`` as a fresh process (quipu's bytecode written
  first, as a wheel install has it), interleaved with
  ``python -c "import numpy"``, ``--words-only`` and ``python -c pass`` (p50 of ``--runs``);
  goal: <= 1.5x the numpy import.

Usage: python bench/bench_deep.py [--size 10000] [--runs 15] [--write-results]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.index import index  # noqa: E402
from quipu.index import vectors

PYTHON = sys.executable  # the interpreter quipu is installed for (numpy and wordllama are its packages)
SESSION = 8  # memories a session


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3, help="full builds timed")
    p.add_argument("--commits", type=int, default=15, help="single commits timed")
    p.add_argument("--runs", type=int, default=15, help="fresh search processes timed")
    p.add_argument("--keep", metavar="DIR")
    p.add_argument("--write-results", action="store_true")
    args = p.parse_args(argv)
    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-deep")
    env = C.isolate(scratch)
    try:
        body = run(args, scratch, env)
    finally:
        C.cleanup(scratch, args.keep)
    print(body)
    if args.write_results:
        C.update_results("bench_deep", "The deep list's costs (issue 15): bench/bench_deep.py", body,
                         command=C.command_line(), machine_line=machine)
    return 0


def run(args: argparse.Namespace, scratch: Path, env: dict[str, str]) -> str:
    corpus = C.Corpus(seed=15)
    memories = [m.with_changes(session=f"bench-session-{n // SESSION}") for n, m in enumerate(corpus.memories(args.size))]
    store, _n = C.bulk_store(scratch / "store", memories, checkout=False, message="bench: deep")
    index.ensure_fresh(store)
    cache = index.index_file(store).parent
    vectors.encoder(cache)  # the tokenizer's SQLite copy, made once per cache like a first search does

    builds_index, builds_vectors = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        index.ensure_fresh(store, force_rebuild=True)
        builds_index.append(time.perf_counter() - start)
        vectors.remove(cache)
        db = index.connect(index.index_file(store))
        start = time.perf_counter()
        built = vectors.ensure_vectors(cache, db)
        builds_vectors.append(time.perf_counter() - start)
        db.close()
        assert built is not None and len(built.ids) == args.size, "the embedding is not installed"

    inc_index, inc_vectors = [], []
    extra = corpus.memories(args.commits, prefix="inc-")
    for memory in extra:
        store.add(memory)
        start = time.perf_counter()
        index.ensure_fresh(store)
        mid = time.perf_counter()
        db = index.connect(index.index_file(store))
        done = vectors.ensure_vectors(cache, db)
        db.close()
        inc_vectors.append(time.perf_counter() - mid)
        inc_index.append(mid - start)
        assert done is not None and done.embedded == 1

    words = [w for w in corpus.words[200:2000:37]]
    queries = [f"how does {words[i]} relate to {words[i + 1]} and the {words[i + 2]}" for i in range(0, len(words) - 3, 3)]
    search_t, words_t, numpy_t, bare_t = [], [], [], []
    base = [PYTHON, "-m", "quipu", "--store", str(store.root), "search"]
    C.compile_quipu(PYTHON)
    C.spawn_timed([*base, "warm up", "--json"], env=env)
    for i in range(args.runs):
        q = queries[i % len(queries)]
        search_t.append(C.spawn_timed([*base, q, "--json"], env=env)[0])
        words_t.append(C.spawn_timed([*base, q, "--json", "--words-only"], env=env)[0])
        numpy_t.append(C.spawn_timed([PYTHON, "-c", "import numpy"], env=env)[0])
        bare_t.append(C.spawn_timed([PYTHON, "-c", "pass"], env=env)[0])

    b_idx, b_vec = C.median(builds_index), C.median(builds_vectors)
    i_idx, i_vec = C.median(inc_index), C.median(inc_vectors)
    s, w, n, bare = C.median(search_t), C.median(words_t), C.median(numpy_t), C.median(bare_t)
    rows = [
        ["index rebuild (FTS5)", f"{b_idx * 1000:.0f} ms", "", ""],
        ["vectors built from nothing", f"{b_vec * 1000:.0f} ms", "", ""],
        ["index + vectors", f"{(b_idx + b_vec) * 1000:.0f} ms", "<= 3 s", "met" if b_idx + b_vec <= 3 else "NOT met"],
        ["one commit: index refresh", f"{i_idx * 1000:.1f} ms", "", ""],
        ["one commit: vectors update", f"{i_vec * 1000:.1f} ms", "", ""],
        ["one commit: both", f"{(i_idx + i_vec) * 1000:.1f} ms", "<= 50 ms", "met" if i_idx + i_vec <= 0.05 else "NOT met"],
        ["`quipu search` fresh process, p50", f"{s * 1000:.0f} ms", f"{s / n:.2f}x `import numpy`",
         "met" if s <= 1.5 * n else "NOT met (goal 1.5x)"],
        ["`quipu search --words-only`, p50", f"{w * 1000:.0f} ms", f"{w / n:.2f}x", ""],
        ["`python -c \"import numpy\"`, p50", f"{n * 1000:.0f} ms", "1.00x", ""],
        ["`python -c pass`, p50", f"{bare * 1000:.0f} ms", f"{bare / n:.2f}x", ""],
    ]
    return (f"{args.size:,} synthetic memories in one commit; builds median of {args.repeat}, commits median of "
            f"{args.commits}, processes p50 of {args.runs} (interleaved).\n\n"
            + C.table(["what", "time", "against", "goal"], rows))


if __name__ == "__main__":
    raise SystemExit(main())
