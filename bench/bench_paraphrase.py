"""Meaning search that finds what was meant (issue 15): paraphrased facts among the real notes.

Each case is one memory that shares no word with its question (checked: no query term's stem is
in the memory), added to the 1,811 real developer notes of testing/realistic.py
(``../shared/data/memories-real``) plus the example store, one store per case, as the Melbourne
acceptance test does. For each: the memory's rank by meaning among all memories (the plain
cosine, and about the store's mean as the deep list gathers for a query that names nothing
specific), its rank in ``quipu search`` (the deep list, limit 10) and whether
``quipu search --words-only`` lists it (it must not: no word is shared).

Usage: python bench/bench_paraphrase.py [--write-results]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.commands.search import search  # noqa: E402
from quipu.index import embed, index, vectors  # noqa: E402
from quipu.prompt.query import extract_terms  # noqa: E402
from quipu.prompt.stem import fts_term  # noqa: E402
from testing import realistic  # noqa: E402
from testing.fixtures import memory  # noqa: E402

# (id, title, body, question): personal facts and two about the project, each asked without its words.
CASES = [
    ("user-moved", "Relocation", "I just moved to Melbourne, so schedule things in AEST.", "where does the user live now"),
    ("user-job", "Career", "I started a new job as a nurse at St Vincent's.", "what does the user do for a living"),
    ("user-dog", "Biscuit", "Our dog Biscuit needs walking at 6.", "does the user have pets"),
    ("user-editor", "Tools", "I write everything in Neovim.", "which editor should I use"),
    ("user-away", "Holiday", "I'm on holiday in Japan until the 20th.", "when is the user away"),
    ("user-food", "Diet", "I can't stand coriander, keep it out of recipes.", "what food does the user dislike"),
    ("user-kids", "Family", "My daughter Ava starts school in September.", "does the user have children"),
    ("user-allergy", "Health", "Peanuts give me a bad reaction; carry an EpiPen.", "is the user allergic to anything"),
    ("user-born", "Dates", "I was born on 3 March 1990.", "how old is the user"),
    ("ship", "Releases", "Deploy with fly deploy from main.", "how do we ship to production"),
    ("backend", "Stack", "The server side is all Rust with Axum.", "what language is the backend written in"),
    ("approve", "Billing changes", "Ask Priya to look over anything touching billing before merge.", "who should approve my PR"),
    # The move again, told and asked otherwise.
    ("moved-note", "Note", "I just moved to Melbourne.", "where does the user live now"),
    ("moved-city", "Melbourne", "I just moved to Melbourne.", "where does the user live now"),
    ("moved-based", "Relocation", "I just moved to Melbourne, so schedule things in AEST.", "where is the user based"),
    ("moved-home", "Relocation", "I just moved to Melbourne, so schedule things in AEST.", "has the user's home changed"),
    ("moved-flat", "Flat", "My new flat is in Toronto, near the lake.", "where does the user live now"),
    ("moved-berlin", "Berlin", "We relocated to Berlin last month.", "where does the user live now"),
]


def shares_no_word(title: str, body: str, query: str) -> bool:
    words = {fts_term(w.strip(".,;:'\"!?")) for w in f"{title} {body}".lower().split()}
    return not any(fts_term(t.text) in words for t in extract_terms(query))


def meaning_rank(store_root: Path, mid: str, query: str, centred: bool) -> int:
    from quipu.store.store import Store

    store = Store(store_root)
    cache = index.index_file(store).parent
    db = index.open_fresh(store)
    try:
        found = vectors.ensure_vectors(cache, db)
        encoder = vectors.encoder(cache)
        assert found is not None and encoder is not None
        ranked = vectors.nearest(found, found.embed(encoder, query), len(found.ids), centred)
    finally:
        db.close()
    return next((n for n, (i, _c) in enumerate(ranked, 1) if i == mid), len(ranked) + 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write-results", action="store_true")
    args = p.parse_args(argv)
    data = realistic.data_dir()
    if data is None:
        print("bench_paraphrase: skipped: needs ../shared/data (memories-real)", file=sys.stderr)
        return 0
    if embed.locate() is None:
        print("bench_paraphrase: skipped: wordllama is not installed", file=sys.stderr)
        return 0
    machine = C.machine()
    notes = realistic.real_notes(data)
    rows = []
    found = 0
    with tempfile.TemporaryDirectory(prefix="quipu-bench-paraphrase-") as tmp:
        C.isolate(Path(tmp))
        for mid, title, body, query in CASES:
            assert shares_no_word(title, body, query), mid
            root = Path(tmp) / mid
            store = realistic.realistic_store(root, notes, extra=[memory(mid, title, body, cls="fact")])
            plain = meaning_rank(root, mid, query, False)
            centred = meaning_rank(root, mid, query, True)
            hits = [h.id for h in search(store, query).hits]
            words = [h.id for h in search(store, query, words_only=True).hits]
            fused = hits.index(mid) + 1 if mid in hits else None
            found += fused is not None
            rows.append([f'"{query}"', f"{title}: {body}", plain, centred, fused or "-",
                         "yes (wrong)" if mid in words else "no"])
    body_text = ("Each memory alone in a store of the real notes and the example store; rank by meaning "
                 "among all memories (plain cosine; about the store's mean, as the deep list gathers for a query "
                 "naming nothing specific), then its place in `quipu search` (limit 10).\n\n"
                 + C.table(["question", "memory", "meaning rank (plain)", "meaning rank (about the mean)",
                            "`quipu search` rank", "listed by --words-only"], rows)
                 + f"\n\nReading: {found} of {len(CASES)} listed in the top 10 by `quipu search`; none shares a word "
                 "with its question.")
    print(body_text)
    if args.write_results:
        C.update_results("bench_paraphrase", "Paraphrased facts among the real notes (issue 15): "
                         "bench/bench_paraphrase.py", body_text, command=C.command_line(), machine_line=machine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
