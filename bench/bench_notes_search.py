"""A note half remembered (issue 15): the deep list on the real notes, not on conversations.

The deep list's constants were chosen on LoCoMo's conversation turns; this checks they do no harm
to a store of developer notes (``bench_shapes.py`` puts this beside plain FTS5 and other shapes). The 1,797 real notes of
``../shared/data/memories-real`` (testing/realistic.py) make one store; each query is six
consecutive words from one note's body at a seeded random place (notes of at least 12 words, a
seeded sample of ``--queries``), as someone who half remembers a note types it. The note's rank is
read in:
- the fused order alone (``deep.rank``: the two gathers fused, before labels and age);
- ``quipu search``'s deep list (``deep.search``) on that store, where no memory has a session;
- the same on a store whose notes each carry their source file as the session, in the file's
  order (one import writing a file's notes one after another): the list must not change.

Usage: python bench/bench_notes_search.py [--queries 600] [--write-results]
"""
from __future__ import annotations

import argparse
import datetime as dt
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.commands.search import _nearest  # noqa: E402
from quipu.index import deep, index  # noqa: E402
from quipu.store.memory import Memory  # noqa: E402
from testing import realistic  # noqa: E402

WORDS = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*")
FUSED = "fused order alone (before labels and age)"
DEEP = "`quipu search` (deep list), notes without sessions"
THREADED = "`quipu search` (deep list), each source file a session"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queries", type=int, default=600, help="notes sampled (default 600)")
    p.add_argument("--keep", metavar="DIR")
    p.add_argument("--write-results", action="store_true")
    args = p.parse_args(argv)
    data = realistic.data_dir()
    if data is None:
        print(f"bench_notes_search: skipped: {realistic.MISSING_DATA}", file=sys.stderr)
        return 0
    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-notes-search")
    C.isolate(scratch)
    try:
        body = run(args, scratch, data)
    finally:
        C.cleanup(scratch, args.keep)
    print(body)
    if args.write_results:
        C.update_results("bench_notes_search", "A note half remembered (issue 15): bench/bench_notes_search.py", body,
                         command=C.command_line(), machine_line=machine)
    return 0


def run(args: argparse.Namespace, scratch: Path, data: Path) -> str:
    notes = realistic.real_notes(data)
    memories = realistic.realistic_memories(notes)
    source = {realistic.note_id(n): n.source for n in notes}
    rng = random.Random(15)
    queries = []
    for m in rng.sample(memories, min(args.queries, len(memories))):
        words = WORDS.findall(m.body)
        if len(words) >= 12:
            at = rng.randrange(0, len(words) - 6)
            queries.append((m.id, " ".join(words[at:at + 6])))
    ranks: dict[str, list[int | None]] = {FUSED: [], DEEP: [], THREADED: []}
    named: list[bool] = []
    for name, store_memories in ((DEEP, memories), (THREADED, in_sessions(memories, source))):
        store, _n = C.bulk_store(scratch / name[-8:].replace(" ", "-"), store_memories, checkout=False,
                                 message="bench: real notes")
        index.ensure_fresh(store)
        db = index.connect(index.index_file(store))
        try:
            nearest = _nearest(store, db)
            for mid, query in queries:
                ranks[name].append(rank_of(mid, [h.id for h in deep.search(db, query, nearest=nearest).hits]))
                if name == DEEP:
                    listed, is_specific = fused_alone(db, query, nearest)
                    ranks[FUSED].append(rank_of(mid, listed))
                    named.append(is_specific)
        finally:
            db.close()
    rows = []
    for which, keep in (("all", lambda n: True), ("naming something specific", lambda n: named[n])):
        for name, found in ranks.items():
            part = [r for n, r in enumerate(found) if keep(n)]
            rows.append([which if name == FUSED else "", name, len(part), f"{sum(1 / r for r in part if r) / len(part):.3f}",
                         *(f"{sum(1 for r in part if r and r <= k) / len(part):.3f}" for k in (1, 3, 10))])
    return (f"{len(memories):,} real notes; {len(queries)} queries of six words from a note's body, {sum(named)} of "
            "them naming something specific. The rank of "
            "the note the words came from, in the top 10.\n\n"
            + C.table(["queries", "system", "n", "MRR@10", "hit@1", "hit@3", "hit@10"], rows)
            + f"\n\nReading: on the queries naming something specific, MRR@10 {rows[4][3]} without sessions and "
            f"{rows[5][3]} with one session a source file, against the fused order's {rows[3][3]}.")


def in_sessions(memories: list[Memory], source: dict[str, str]) -> list[Memory]:
    """Each note in its source file's session, a second after the note before it in the file."""
    start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    return [m.with_changes(session=source[m.id], created=(start + dt.timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ"))
            for n, m in enumerate(memories)]


def fused_alone(db: object, query: str, nearest: deep.Nearest | None) -> tuple[list[str], bool]:
    """The fused list before labels and age (the top 10), and whether the query names something specific."""
    fusion = deep.fused_list(db, query, nearest)
    return [mid for mid, *_r in fusion.fused[:10]], fusion.specific


def rank_of(mid: str, listed: list[str]) -> int | None:
    return listed.index(mid) + 1 if mid in listed[:10] else None


if __name__ == "__main__":
    raise SystemExit(main())
