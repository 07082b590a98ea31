"""Recall by store shape: `quipu search` against plain FTS5 on stores of several shapes, one table.

A ranking rule fitted on one shape of store (conversation turns with sessions, say) may do harm on
another (one note a session, a user's turns only, a reply that follows the fact): each shape here
is a store built from the same public data, and each system is measured on all of them in the
same run. Data, read at run time from ``<repo>/../shared/data`` (never copied into this
repository; a shape whose data is absent is skipped with a message):
- LoCoMo (``locomo/locomo10.json``): ``--conversations`` of its ten conversations (evenly spread;
  every question of each whose evidence the shape holds), built as ``bench_locomo.py`` builds
  them (one memory a turn, ``"<speaker>: <text>"``, the neutral ``D<s>T<t>`` title, no decay), in
  five shapes:
  - ``both speakers, sessions``: every turn, each in its session, a minute apart;
  - ``one speaker, sessions``: only the turns of each conversation's first speaker (questions
    keep the evidence that speaker holds; those left with none are skipped);
  - ``both speakers, no session``: every turn, no session (no thread);
  - ``reply after the evidence``: every turn, each session's turns in reverse order, so what was
    the answer now comes first and the other speaker's turn, which echoes the question's words,
    follows it (as where a user states a fact and the assistant answers after it);
  - ``one memory a session``: each session one memory, its turns one a line (bodies of hundreds
    to thousands of words); the evidence is the sessions holding an evidence turn.
- The real notes (``memories-real/notes.jsonl``): ``--queries`` of them (seeded, none of the 600
  that ``bench_notes_search.py`` samples), each queried by six consecutive words of its body at a
  seeded place, as that bench makes them; the evidence is that note. Two shapes: ``notes, no session`` and ``notes, a session a
  source file`` (the file's notes one after another). A third asks the same store in a
  developer's words: ``a developer's prompts``, the prompts of bench/data/heldout_pairs_4.json to
  _7.json (a prompt a developer in the note's project would type when the note would help,
  written from the note alone; the evidence is that note). A fourth asks it real prompts:
  ``real prompts``, prompts-dev's topical prompts of bench/data/real_pairs*.json, each with the
  real notes of its author that answer it (any of them counts: they are often one note copied
  across the author's repositories).

Systems: ``plain FTS5`` (one FTS5 row per memory holding its title, description and body,
``porter unicode61``, the question's non-stopword words OR-ed, ``ORDER BY bm25()``, as in
``bench_locomo.py``); ``fused list`` (``quipu.index.deep``'s lexical and meaning gathers fused
by ``deep.rank``, before labels and age); ``shipped`` (``deep.search``, what ``quipu search``
lists). Metrics over the top 10: any@1 and any@5 (some evidence at rank 1 / in the top 5), all@5
(every piece of evidence in the top 5), R@10 (the share of the evidence in the top 10).

What is tuned and where: the fusion constants (``deep.K``, ``deep.MEANING_WEIGHT``) were chosen
on all of LoCoMo in the ``both speakers, sessions`` shape (those cells are marked ``fit``); the
open-query rule (``deep.OPEN_*``, ``deep.SHARE_POWER``, ``deep.OWN_WORDS_BONUS``) on twelve to
eighteen paraphrased facts among the real notes (``bench_paraphrase.py``), and how many terms make
a query too long for it (``reading.OPEN_MAX_TERMS``) on the first three held-out sets; the lexical gather's
field weights (``deep.LEXICAL_FIELD_WEIGHTS``) and the fewest generic words that make a topic
(``deep.WHOLE_QUERY_GENERIC_TERMS``) on queries of the 600 notes ``bench_notes_search.py``
samples, which the notes shapes here leave out. Nothing in the list is learnt.

Usage: python bench/bench_shapes.py [--conversations 3] [--queries 300] [--write-results]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sqlite3
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import bench_locomo as L  # noqa: E402

from quipu.commands.search import _nearest  # noqa: E402
from quipu.index import deep, index  # noqa: E402
from quipu.store.memory import Memory  # noqa: E402
from testing import realistic  # noqa: E402

DEPTH = 10
SYSTEMS = ("plain FTS5", "fused list", "shipped")
WORDS = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*")
# The shape the fusion constants were chosen on: its cells are in-sample for them.
FIT_SHAPE = "LoCoMo, both speakers, sessions"
# The held-out pairs (a real note, a prompt a developer would type for it) that ask the notes in
# a developer's words: reading.OPEN_MAX_TERMS was chosen on the first three sets, these are the rest.
HELDOUT = Path(__file__).resolve().parent / "data"
PROMPT_SETS = ("heldout_pairs_4.json", "heldout_pairs_5.json", "heldout_pairs_6.json", "heldout_pairs_7.json")
# Real prompts of prompts-dev, each with the real notes of its author that answer it (copies of one
# note across the author's repositories are alternatives).
REAL_SETS = ("real_pairs.json", "real_pairs_2.json")


@dataclass
class Ask:
    text: str
    evidence: frozenset[str]
    any_of: bool = False  # the evidence are alternatives (copies of one note): finding one is finding all


@dataclass
class Shape:
    name: str
    memories: list[Memory]
    asks: list[Ask]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--conversations", type=int, default=3, help="LoCoMo conversations used, evenly spread (default 3 of 10)")
    p.add_argument("--queries", type=int, default=300, help="real notes queried (default 300)")
    p.add_argument("--keep", metavar="DIR")
    p.add_argument("--write-results", action="store_true")
    args = p.parse_args(argv)
    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-shapes")
    C.isolate(scratch)
    try:
        shapes = locomo_shapes(args.conversations) + notes_shapes(args.queries)
        if not shapes:
            print("bench_shapes: skipped: no data under ../shared/data (locomo/, memories-real/)", file=sys.stderr)
            return 0
        body = run(shapes, scratch)
    finally:
        C.cleanup(scratch, args.keep)
    print(body)
    if args.write_results:
        C.update_results("bench_shapes", "Recall by store shape: bench/bench_shapes.py", body,
                         command=C.command_line(), machine_line=machine)
    return 0


# ------------------------------------------------------------------ shapes


def locomo_shapes(count: int) -> list[Shape]:
    if not L.DEFAULT_DATA.is_file():
        print(f"bench_shapes: LoCoMo shapes skipped: no data at {L.DEFAULT_DATA}", file=sys.stderr)
        return []
    conversations = L.load(L.DEFAULT_DATA)
    step = max(1, len(conversations) // max(1, count))
    chosen = conversations[::step][:count]
    out: dict[str, Shape] = {}

    def add(name: str, memories: list[Memory], asks: list[Ask]) -> None:
        shape = out.setdefault(name, Shape(name, [], []))
        shape.memories.extend(memories)
        shape.asks.extend(asks)

    for _conv, turns, questions in chosen:
        # Each conversation is its own store: its name keeps the shapes' stores apart.
        everything = L.memories(turns, "dia", False)
        add("both speakers, sessions", everything, asks_of(questions))
        first = turns[0].speaker
        mine = {t.memory_id for t in turns if t.speaker == first}
        add("one speaker, sessions", [m for m in everything if m.id in mine], asks_of(questions, mine))
        add("both speakers, no session", [m.with_changes(session=None) for m in everything], asks_of(questions))
        add("reply after the evidence", reversed_sessions(turns, everything), asks_of(questions))
        docs, session_of = session_documents(turns)
        add("one memory a session", docs,
            [Ask(q.text, frozenset(session_of[e] for e in q.evidence)) for q in questions])
    names = {s.name: f"LoCoMo, {s.name}" for s in out.values()}
    return [replace(s, name=names[s.name]) for s in out.values()]


def asks_of(questions: Sequence[L.Question], held: set[str] | None = None) -> list[Ask]:
    out = []
    for q in questions:
        evidence = q.evidence if held is None else q.evidence & held
        if evidence:
            out.append(Ask(q.text, frozenset(evidence)))
    return out


def reversed_sessions(turns: Sequence[L.Turn], memories: Sequence[Memory]) -> list[Memory]:
    """Each session's turns in reverse order: the turn that answered now comes before the one it answered."""
    last: dict[int, int] = {}
    for t in turns:
        last[t.dia[0]] = max(last.get(t.dia[0], 0), t.dia[1])
    by_id = {t.memory_id: t for t in turns}
    out = []
    for m in memories:
        t = by_id[m.id]
        created = (t.date + L.dt.timedelta(minutes=last[t.dia[0]] + 1 - t.dia[1])).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append(m.with_changes(created=created))
    return out


def session_documents(turns: Sequence[L.Turn]) -> tuple[list[Memory], dict[str, str]]:
    """One memory a session (its turns one a line), and each turn's session memory."""
    lines: dict[int, list[L.Turn]] = {}
    for t in turns:
        lines.setdefault(t.dia[0], []).append(t)
    out, session_of = [], {}
    for number, part in sorted(lines.items()):
        mid = f"{part[0].memory_id.rsplit('-d', 1)[0]}-s{number}"
        fields: dict[str, object] = {"id": mid, "title": f"D{number}", "class": "event", "origin": "import",
                                     "created": part[0].date.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                     "session": L.session_of(part[0]), "half_life_days": None}
        out.append(Memory.create(fields, "\n".join(t.text for t in part) + "\n"))
        session_of.update((t.memory_id, mid) for t in part)
    return out, session_of


def notes_shapes(count: int) -> list[Shape]:
    data = realistic.data_dir()
    if data is None:
        print(f"bench_shapes: notes shapes skipped: {realistic.MISSING_DATA}", file=sys.stderr)
        return []
    notes = realistic.real_notes(data)
    memories = realistic.realistic_memories(notes)
    source = {realistic.note_id(n): n.source for n in notes}
    # The notes bench_notes_search.py queries (its seeded sample of 600) are the ones the deep list's
    # field weights and WHOLE_QUERY_GENERIC_TERMS were chosen on: these queries come from the others.
    chosen_on = {m.id for m in random.Random(15).sample(memories, min(600, len(memories)))}
    rest = [m for m in memories if m.id not in chosen_on]
    rng = random.Random(16)
    asks = []
    for m in rng.sample(rest, min(count, len(rest))):
        words = WORDS.findall(m.body)
        if len(words) >= 12:
            at = rng.randrange(0, len(words) - 6)
            asks.append(Ask(" ".join(words[at:at + 6]), frozenset({m.id})))
    start = L.dt.datetime(2026, 11, 1, tzinfo=L.dt.timezone.utc)
    threaded = [m.with_changes(session=source[m.id], created=(start + L.dt.timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ"))
                for n, m in enumerate(memories)]
    shapes = [Shape("real notes, no session", memories, asks), Shape("real notes, a session a source file", threaded, asks)]
    known = {m.id for m in memories}
    prompts = [Ask(pair["prompt"], frozenset({pair["note"]})) for name in PROMPT_SETS
               for pair in json.loads((HELDOUT / name).read_text(encoding="utf-8"))["pairs"] if pair["note"] in known]
    if prompts:
        shapes.append(Shape("real notes, a developer's prompts", memories, prompts))
    typed = {hashlib.sha1(p.text.encode("utf-8")).hexdigest(): p.text for p in realistic.real_prompts(data, "topical")}
    real = [Ask(typed[pair["prompt_sha1"]], frozenset(n for n in pair["notes"] if n in known), any_of=True)
            for name in REAL_SETS if (HELDOUT / name).is_file()
            for pair in json.loads((HELDOUT / name).read_text(encoding="utf-8"))["pairs"]
            if pair["prompt_sha1"] in typed and any(n in known for n in pair["notes"])]
    if real:
        shapes.append(Shape("real notes, real prompts", memories, real))
    return shapes


# ------------------------------------------------------------------ systems


def stores_of(shape: Shape) -> list[tuple[list[Memory], list[Ask]]]:
    """A LoCoMo shape is one store per conversation (its asks are answered in their own); the notes are one store."""
    if not shape.name.startswith("LoCoMo"):
        return [(shape.memories, shape.asks)]
    groups: dict[str, list[Memory]] = {}
    for m in shape.memories:
        groups.setdefault(m.id.split("-")[0] + "-" + m.id.split("-")[1], []).append(m)
    out = []
    for memories in groups.values():
        ids = {m.id for m in memories}
        out.append((memories, [a for a in shape.asks if next(iter(a.evidence)) in ids]))
    return out


def run(shapes: Sequence[Shape], scratch: Path) -> str:
    rows = []
    below = []
    for n, shape in enumerate(shapes):
        ranked: dict[str, list[list[str]]] = {s: [] for s in SYSTEMS}
        asks: list[Ask] = []
        for m, (memories, part) in enumerate(stores_of(shape)):
            for system, lists in rank_store(scratch / f"s{n}-{m}", memories, part).items():
                ranked[system].extend(lists)
            asks.extend(part)
        figures = {s: metrics(ranked[s], asks) for s in SYSTEMS}
        for s in SYSTEMS:
            cells = [f"{v:.3f}" + (" fit" if shape.name == FIT_SHAPE and s != "plain FTS5" else "") for v in figures[s]]
            rows.append([shape.name if s == SYSTEMS[0] else "", s, len(asks) if s == SYSTEMS[0] else "", *cells])
            if s != "plain FTS5":
                below += [f"{shape.name}: {s} {metric} {v:.3f} < {p:.3f}"
                          for metric, v, p in zip(METRICS, figures[s], figures["plain FTS5"], strict=True) if v < p - 1e-9]
    return (C.table(["shape", "system", "questions", *METRICS], rows)
            + "\n\nCells marked fit: the fusion constants were chosen on that shape (all of LoCoMo). "
            + ("Below plain FTS5: " + "; ".join(below) + "." if below else
               "Every cell of the fused list and of what ships is at or above plain FTS5's."))


METRICS = ("any@1", "any@5", "all@5", "R@10")


def metrics(lists: Sequence[Sequence[str]], asks: Sequence[Ask]) -> list[float]:
    n = len(asks) or 1

    def held(a: Ask, top: Sequence[str]) -> float:
        """The share of the evidence in ``top`` (alternatives: 1 when one of them is)."""
        found = len(a.evidence & set(top))
        return float(found > 0) if a.any_of else found / len(a.evidence)
    return [sum(1.0 for r, a in zip(lists, asks, strict=True) if a.evidence & set(r[:1])) / n,
            sum(1.0 for r, a in zip(lists, asks, strict=True) if a.evidence & set(r[:5])) / n,
            sum(1.0 for r, a in zip(lists, asks, strict=True) if held(a, r[:5]) == 1.0) / n,
            sum(held(a, r[:DEPTH]) for r, a in zip(lists, asks, strict=True)) / n]


def rank_store(root: Path, memories: list[Memory], asks: Sequence[Ask]) -> dict[str, list[list[str]]]:
    plain = sqlite3.connect(":memory:")
    plain.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize='porter unicode61')")
    plain.executemany("INSERT INTO t VALUES (?, ?)",
                      [(m.id, "\n".join(p for p in (m.title, m.description, m.body) if p)) for m in memories])
    store, _n = C.bulk_store(root, memories, checkout=False, message="bench: shapes")
    index.ensure_fresh(store)
    db = index.connect(index.index_file(store))
    out: dict[str, list[list[str]]] = {s: [] for s in SYSTEMS}
    try:
        nearest = _nearest(store, db)
        for a in asks:
            terms = L.baseline_terms(a.text)
            expr = " OR ".join(L._quote(t) for t in terms)
            out["plain FTS5"].append([r[0] for r in plain.execute(
                "SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (expr, DEPTH))] if terms else [])
            out["fused list"].append(fused_list(db, a.text, nearest))
            out["shipped"].append([h.id for h in deep.search(db, a.text, limit=DEPTH, nearest=nearest).hits])
    finally:
        db.close()
        plain.close()
    return out


def fused_list(db: sqlite3.Connection, query: str, nearest: deep.Nearest | None) -> list[str]:
    """The two gathers fused (``deep.fused_list``), before labels and age: the top ``DEPTH``."""
    return [mid for mid, *_r in deep.fused_list(db, query, nearest).fused[:DEPTH]]


Lists = Callable[[str], list[str]]

if __name__ == "__main__":
    raise SystemExit(main())
