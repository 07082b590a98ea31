"""`quipu search` reads the deep list: words and meaning gathered wide, fused by rank (issue 15)."""
from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest

from quipu.index import deep
from quipu.index import index
from quipu.index import matrix
from quipu.index import person
from quipu.index import reading
from quipu.index import vectors
from quipu.commands.search import search
from quipu.prompt.query import extract_terms
from quipu.prompt.stem import fts_term
from quipu.store.store import Store
from testing import realistic
from testing.fixtures import TOPIC_NOTES as NOTES
from testing.fixtures import add_all, make_store, memory, quipu



def ids(store: Store, query: str, **kw: bool) -> list[str]:
    return [h.id for h in search(store, query, **kw).hits]


def test_every_content_term_gathers_not_only_the_three_rarest(store_path: Path) -> None:
    """Issue 15: "how many hours ... spent playing games in total" searched only its three rarest
    words; the deep list gathers with every one of them."""
    store = make_store(store_path)
    notes = [memory("games", "Evenings", "Sam spent four hours playing board games with friends."),
             memory("total", "Budget", "The total spent this month was many dollars."),
             *[memory(f"filler-{n}", f"Filler {n}", f"Many things were spent in total on day {n}.") for n in range(6)]]
    add_all(store, notes)
    found = ids(store, "how many hours has Sam spent playing games in total?", words_only=True)
    assert found[0] == "games"


def test_a_superseded_memory_ranks_below_its_successor(store_path: Path) -> None:
    store = make_store(store_path)
    add_all(store, [memory("old-host", "Database host is db1.internal",
                           "The database host is db1.internal, database host db1, host db1 for everything."),
                    memory("new-host", "Database host moved", "Use db2.internal for the database from now on.")])
    store.supersede("old-host", "new-host")
    index.ensure_fresh(store)
    hits = search(store, "database host db1").hits
    assert [h.id for h in hits] == ["new-host", "old-host"]
    assert hits[1].lexical_rank == 1 and hits[1].label_factor == deep.SUPERSEDED_PENALTY


def test_age_reorders_comparable_hits_but_never_buries_an_old_event(store_path: Path) -> None:
    store = make_store(store_path)
    add_all(store, [
        memory("trip-2024", "Trip to Lisbon", "Jon visited Lisbon and the Lisbon tram museum.", cls="event",
               created="2024-03-01T00:00:00Z"),
        memory("trip-note", "Packing list", "Remember the adapter for Lisbon.", cls="event"),
        memory("twin-old", "Kafka retention", "Kafka retention is seven days.", cls="event",
               created="2024-03-01T00:00:00Z"),
        memory("twin-new", "Kafka retention", "Kafka retention is seven days.", cls="event"),
    ])
    lisbon = search(store, "when did Jon visit Lisbon").hits
    assert lisbon[0].id == "trip-2024"  # two years old, 0.5 ** (640 / 90) of it would be 0.7%
    assert lisbon[0].age_factor >= 1 - deep.AGE_TIEBREAK
    assert ids(store, "kafka retention")[:2] == ["twin-new", "twin-old"]  # equal evidence: the newer first


def test_nothing_learnt_ships_and_the_list_is_the_fused_order(store_path: Path) -> None:
    """No fitted re-ranking is shipped or read: every hit's score is its fused score times its
    labels and age, whatever the query (one that names something specific or not)."""
    assert importlib.util.find_spec("quipu.index.rerank") is None
    data = Path(deep.__file__).resolve().parent.parent / "data"
    assert sorted(p.name for p in data.iterdir() if p.suffix == ".json") == []
    store = make_store(store_path)
    add_all(store, [memory("asks", "Kvrocks data", "Where does kvrocks keep its data?"),
                    memory("answers", "Kvrocks storage", "Kvrocks keeps its data on local disk in RocksDB."),
                    memory("garden", "Garden shed", "The garden hose goes in the shed behind the house.")])
    for query in ("where does kvrocks keep its data", "where does the garden hose go"):
        hits = search(store, query).hits
        assert hits
        assert [h.score for h in hits] == sorted((h.fused * h.label_factor * h.age_factor for h in hits), reverse=True)
        assert all(h.score == h.fused * h.label_factor * h.age_factor for h in hits)


# A conversation kept as memories, one a turn, in its session: the answer follows its question and
# shares no word with what is asked later.
ROAD_TRIP = [
    ("trip-1", "Congrats on the new job, Nate! By the way, I took a road trip last month for my research."),
    ("trip-2", "That road trip sounds great, Joanna! Where did you go? Did you find anything for the book?"),
    ("trip-3", "I went to Woodhaven, a small town in the Midwest, and spent days in its old library."),
    ("trip-4", "Sounds like a lovely place. I'm off to the gym now, talk soon!"),
]
# The same shape the other way round: the fact first, then a reply that echoes its words.
MOVE = [
    ("move-1", "I moved to Melbourne in March for the new lab job."),
    ("move-2", "Melbourne in March, how exciting! A new lab job too. How is the move going?"),
    ("move-3", "Slowly: the flat still has no furniture."),
]
OTHER_NOTES = [
    memory("road-works", "Road works", "The road to the office is closed for repairs this week."),
    memory("trip-reports", "Trip reports", "Trip reports go in the shared travel folder with receipts."),
    memory("joanna-film", "Joanna's film", "Joanna's screenplay was shown at the film festival on Friday."),
    memory("gym", "Gym", "The gym opens at six on weekdays."),
]


def conversation(turns: list[tuple[str, str]], session: str | None) -> list:  # type: ignore[type-arg]
    return [memory(mid, f"Turn {n}", text, cls="event", created=f"2026-05-0{n}T10:00:00Z",
                   **({"session": session} if session else {}))
            for n, (mid, text) in enumerate(turns, 1)]


@pytest.mark.parametrize("query", ["Where did Joanna go on her road trip?", "When did I move to Melbourne?",
                                   "what furniture is in the flat", "lab job"])
def test_a_session_never_changes_the_list(store_path: Path, query: str) -> None:
    """The same memories with and without their session list the same hits in the same order with
    the same fused scores: a memory written beside a hit is never brought in nor raised for it, so one
    that shares none of the query's words never outranks a memory's own evidence."""
    listed = []
    for n, session in enumerate(("chat", None)):
        store = make_store(store_path / str(n))
        add_all(store, [*conversation(ROAD_TRIP, session and f"{session}-trip"),
                        *conversation(MOVE, session and f"{session}-move"), *OTHER_NOTES])
        listed.append([(h.id, round(h.fused, 12), h.lexical_rank) for h in search(store, query).hits])
    assert listed[0] and listed[0] == listed[1]


def test_the_evidence_stays_above_the_reply_that_follows_it(store_path: Path) -> None:
    """The fact is stated first and the reply after it echoes its words: the fact, which holds every
    word of the question, ranks first with or without a session."""
    store = make_store(store_path)
    add_all(store, [*conversation(MOVE, "chat-move"), *OTHER_NOTES])
    assert ids(store, "moved to Melbourne for the lab job")[0] == "move-1"


def test_a_memory_holding_every_word_ranks_above_those_lacking_one_however_long(store_path: Path) -> None:
    """One memory a session, thousands of words each: the session where the fact was said holds
    every word of the question and ranks above a short note that holds its rarest words, and
    above sessions that mention some of them many times."""
    store = make_store(store_path)
    chatter = " ".join(f"Turn {n}: we talked about the weather, the garden and the week ahead." for n in range(300))
    add_all(store, [
        memory("session-fact", "Session 3", f"{chatter}\nCaroline: I did go to the LGBTQ support group yesterday.\n{chatter}",
               cls="event"),
        memory("session-talk", "Session 4", f"{chatter}\n" + "Caroline: the support group again, the group!\n" * 20,
               cls="event"),
        memory("short-note", "LGBTQ group", "An LGBTQ group meets on Fridays.", cls="event"),
    ])
    query = "When did Caroline go to the LGBTQ support group?"
    for words_only in (True, False):
        hits = search(store, query, words_only=words_only).hits
        assert hits[0].id == "session-fact", [h.id for h in hits]
        assert hits[0].fused > deep.WHOLE_QUERY > max(h.fused for h in hits[1:])


def test_a_memory_too_long_for_one_vector_is_ranked_by_its_words_alone(store_path: Path) -> None:
    store = make_store(store_path)
    add_all(store, [memory("long", "Session", "word " * (deep.MEANING_MAX_WORDS + 1), cls="event"),
                    memory("short", "Note", "word " * (deep.MEANING_MAX_WORDS - 10), cls="event")])
    db = index.open_fresh(store)
    try:
        for specific in (True, False):
            found = deep.gather_meaning(db, "words", lambda _q, _d, _c: [("long", 0.9), ("short", 0.5)], specific)
            assert found == [("short", 0.5)]
    finally:
        db.close()


def test_one_or_two_generic_words_held_together_keep_the_fused_order() -> None:
    assert not deep.has_topic(extract_terms("where is the user based"))
    assert deep.has_topic(extract_terms("has the user's home changed"))
    assert deep.has_topic(extract_terms("kvrocks data"))
    fused = deep.rank(["both-words", "one-word"], [("meaning", 0.9)], False, [1.0, 0.4], topic=False)
    assert [i for i, *_r in fused][0] == "meaning"
    fused = deep.rank(["both-words", "one-word"], [("meaning", 0.9)], False, [1.0, 0.4], topic=True)
    assert [i for i, *_r in fused] == ["both-words", "meaning", "one-word"]


def test_explain_shows_ranks_fused_score_and_factors(store: Store) -> None:
    store.label("deploy-note", "unverified", detail="no such pipeline")
    index.ensure_fresh(store)
    done = quipu("--store", str(store.root), "search", "--explain", "pipeline deploys")
    assert done.returncode == 0, done.stderr
    assert "deploy-note" in done.stdout and "lexical #1" in done.stdout and "fused " in done.stdout
    assert f"labels x{deep.UNVERIFIED_PENALTY:g}" in done.stdout
    data = json.loads(quipu("--store", str(store.root), "search", "--explain", "--json", "pipeline").stdout)
    assert data["terms"] == ["pipeline"] and data["hits"][0]["lexical_rank"] == 1


def test_words_only_runs_no_meaning_search(store: Store) -> None:
    assert not search(store, "pipeline", words_only=True).meaning
    assert search(store, "pipeline").meaning is (vectors.encoder(store.cache_dir) is not None)


def test_vectors_follow_the_index_one_memory_at_a_time(store: Store) -> None:
    if vectors.encoder(store.cache_dir) is None:
        pytest.skip("the static embedding (wordllama) is not installed")
    cache = index.index_file(store).parent
    db = index.open_fresh(store)
    first = vectors.ensure_vectors(cache, db)
    db.close()
    assert first is not None and first.embedded == len(NOTES) and sorted(first.ids) == sorted(m for m, _t in NOTES)
    add_all(store, [memory("new-note", "Cron runs at midnight", "The cron job runs at midnight UTC.")])
    db = index.open_fresh(store)
    second = vectors.ensure_vectors(cache, db)
    db.close()
    assert second is not None and (second.embedded, second.removed) == (1, 0) and "new-note" in second.ids
    index.ensure_fresh(store, force_rebuild=True)  # a rebuilt index: same texts, nothing embedded again
    db = index.open_fresh(store)
    third = vectors.ensure_vectors(cache, db)
    db.close()
    assert third is not None and third.embedded == 0 and len(third.ids) == len(NOTES) + 1
    assert (third.matrix == second.matrix).all()


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
@pytest.mark.parametrize("name", [vectors.FILE_NAME, matrix.FILE_NAME])
def test_a_damaged_vectors_file_never_breaks_search(store: Store, damage: str, name: str) -> None:
    if vectors.encoder(store.cache_dir) is None:
        pytest.skip("the static embedding (wordllama) is not installed")
    assert ids(store, "pipeline") == ["deploy-note"]
    path = index.index_file(store).parent / name
    data = path.read_bytes()
    path.write_bytes(b"not a database at all " * 400 if damage == "garbage" else data[: len(data) // 3])
    assert ids(store, "pipeline") == ["deploy-note"]
    assert ids(store, "pipeline") == ["deploy-note"] and search(store, "pipeline").meaning


def test_searches_read_one_flat_copy_of_the_vectors_and_never_a_stale_one(store: Store) -> None:
    """The first search after a change writes every vector out as one file; later searches map
    it. A copy made before a commit is never read after it."""
    if vectors.encoder(store.cache_dir) is None:
        pytest.skip("the static embedding (wordllama) is not installed")
    flat = store.cache_dir / matrix.FILE_NAME

    def synced() -> vectors.Vectors:
        db = index.open_fresh(store)
        try:
            found = vectors.ensure_vectors(store.cache_dir, db)
        finally:
            db.close()
        assert found is not None
        return found

    def ranked(query: str) -> list[tuple[str, int | None, float | None]]:
        return [(h.id, h.meaning_rank, h.cosine) for h in search(store, query).hits]

    first = ranked("docker images")
    assert flat.is_file() and any(cosine for _i, _r, cosine in first)
    made = flat.stat().st_mtime_ns
    assert ranked("docker images") == first and flat.stat().st_mtime_ns == made
    copy = matrix.read(flat, synced().generation)
    rows = sqlite3.connect(store.cache_dir / vectors.FILE_NAME).execute("SELECT id, vec FROM vectors ORDER BY id")
    assert copy is not None and [(i, bytes(v)) for i, v in rows] == [
        (i, row.astype("<f4").tobytes()) for i, row in zip(*copy, strict=True)]
    stale = flat.read_bytes()
    add_all(store, [memory("cron-note", "Cron runs at midnight", "The cron job runs at midnight UTC.")])
    flat.write_bytes(stale)  # as if the commit had landed between a search's two reads
    now = synced()
    assert now.embedded == 1 and "cron-note" in now.ids and now.matrix.shape[0] == len(NOTES) + 1
    assert flat.read_bytes() != stale  # written again, with the new memory
    assert "cron-note" in [i for i, _r, _c in ranked("when does the cron job run")]


def test_a_search_on_a_fresh_index_never_loads_the_git_library(store: Store) -> None:
    """pygit2 costs a search about as much as the rest of it; reading HEAD from git's files is
    enough to know the index is fresh."""
    index.ensure_fresh(store)
    done = quipu("--store", str(store.root), "search", "pipeline", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0 and "deploy-note" in done.stdout, done.stderr
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "quipu.index.deep" in loaded and "pygit2" not in loaded


def test_a_specific_word_the_store_has_is_answered_by_words(store: Store) -> None:
    """A query naming an identifier the store has lists only the memories with it."""
    assert ids(store, "xdist") == ["pytest-note"]


@pytest.mark.skipif(realistic.data_dir() is None, reason=realistic.MISSING_DATA)
@pytest.mark.parametrize(("title", "body", "query"), [
    ("Relocation", "I just moved to Melbourne, so schedule things in AEST.", "where does the user live now"),
    ("Note", "I just moved to Melbourne.", "where does the user live now"),
    ("Relocation", "I just moved to Melbourne, so schedule things in AEST.", "has the user's home changed"),
])
def test_where_the_user_lives_finds_a_move_to_melbourne_by_meaning(store_path: Path, title: str, body: str,
                                                                    query: str) -> None:
    """Issue 15: keyword search cannot find "I just moved to Melbourne" for "where does the user
    live now": no word of the query is in it. Among 1,811 real notes, meaning search must, however
    the move is titled or the question put."""
    data = realistic.data_dir()
    assert data is not None
    move = memory("user-moved", title, body, cls="fact")
    store = realistic.realistic_store(store_path, realistic.real_notes(data), extra=[move])
    words = {fts_term(w.strip(".,;:'")) for w in f"{move.title} {move.body}".lower().split()}
    assert not any(fts_term(t.text) in words for t in extract_terms(query))
    if vectors.encoder(store.cache_dir) is None:
        pytest.skip("the static embedding (wordllama) is not installed")
    assert "user-moved" not in ids(store, query, words_only=True)
    assert "user-moved" in ids(store, query)


@pytest.mark.skipif(realistic.data_dir() is None, reason=realistic.MISSING_DATA)
def test_a_pet_is_found_for_a_question_that_shares_no_word_with_it(store_path: Path) -> None:
    """The Melbourne case's class: "does the user have pets" for "Our dog Biscuit needs walking"."""
    data = realistic.data_dir()
    assert data is not None
    dog = memory("user-dog", "Biscuit", "Our dog Biscuit needs walking at 6.", cls="fact")
    store = realistic.realistic_store(store_path, realistic.real_notes(data), extra=[dog])
    if vectors.encoder(store.cache_dir) is None:
        pytest.skip("the static embedding (wordllama) is not installed")
    query = "does the user have pets"
    assert "user-dog" not in ids(store, query, words_only=True)
    hit = next(h for h in search(store, query).hits if h.id == "user-dog")
    assert hit.lexical_rank is None and hit.meaning_rank is not None


@pytest.mark.skipif(realistic.data_dir() is None, reason=realistic.MISSING_DATA)
@pytest.mark.parametrize(("query", "title_start"), [
    ("the new provider has no temperature param. should we raise when a user passes temperature or just drop it "
     "quietly?", "Silently ignore unsupported generic tuning settings"),
    ("need every caller of the Refresh method in the go code, grep gives me a ton of noise because of other types. "
     "better way?", "When the gopls MCP tools are available"),
])
def test_a_long_request_in_everyday_words_is_answered_by_its_words(store_path: Path, query: str,
                                                                    title_start: str) -> None:
    """A request of a sentence or more that names nothing specific: its one vector is the mean
    of many words, so it is ranked by its words alone, and the real note it was written for stays
    in the top two (meaning alone had pushed both out of the top ten)."""
    data = realistic.data_dir()
    assert data is not None
    store = realistic.realistic_store(store_path, realistic.real_notes(data))
    if vectors.encoder(store.cache_dir) is None:
        pytest.skip("the static embedding (wordllama) is not installed")
    assert len(extract_terms(query)) > reading.OPEN_MAX_TERMS
    result = search(store, query)
    hits = result.hits
    assert hits and all(h.lexical_rank is not None and h.meaning_rank is None for h in hits)
    assert not result.meaning and str(reading.OPEN_MAX_TERMS) in result.words_alone
    assert any(h.title.startswith(title_start) for h in hits[:2]), [h.title for h in hits[:3]]


def test_a_long_request_is_gathered_by_the_words_the_hook_sets_aside_too(store_path: Path) -> None:
    """A path's folders, a file's extension and conversational words are no evidence for the hook,
    but in a request of a sentence or more BM25 weighs them by how rare they are, as plain FTS5
    does: "astro" at the front of a long path finds the note that maps it, and "max_turns" is
    read as the phrase of its parts."""
    store = make_store(store_path)
    add_all(store, [
        memory("astro-dist", "Built files", "node_modules/astro/dist/... maps to packages/astro/src/..."),
        memory("turns", "Runner arguments", "Runner.run keeps max_turns as its last positional argument."),
        *[memory(f"render-{n}", f"Render core {n}", f"The core render step {n} has a fix in the monorepo; "
                 "points of the stack trace list core render frames.") for n in range(6)],
        *[memory(f"max-{n}", f"Turn {n}", f"The max size of turn {n} is set by the runner.") for n in range(4)],
    ])
    query = "stack trace points at node_modules/astro/dist/core/render/index.js:88, where do i actually make the fix"
    assert len(extract_terms(query)) > reading.OPEN_MAX_TERMS
    assert "astro" not in [t.text for t in extract_terms(query)] and "astro" in reading.every_word(query)
    assert ids(store, query)[0] == "astro-dist"
    assert "astro" in search(store, query).terms  # --explain lists what was looked for
    words = reading.every_word("can you tell me why max_turns is the last positional arg of the runner's run?")
    assert "max_turns" in words and not {"can", "you", "me", "why", "is", "the", "of"} & set(words)
    assert ids(store, "can you tell me why max_turns is the last positional arg of the runner's run?")[0] == "turns"


def test_a_hit_holding_every_word_of_the_query_counts_fully_one_with_a_common_word_less(store_path: Path) -> None:
    store = make_store(store_path)
    add_all(store, [memory("both", "Lisbon trip", "Our trip to Lisbon in May."),
                    *[memory(f"trip-{n}", f"Trip {n}", f"Another trip, number {n}.") for n in range(6)]])
    db = index.open_fresh(store)
    try:
        found = deep.lexical(db, ["lisbon", "trip"])
        rowid = dict(db.execute("SELECT id, rowid FROM memories").fetchall())
        held = dict(zip([r for r, _s in found], deep.shares(db, ["lisbon", "trip"], [r for r, _s in found]), strict=True))
    finally:
        db.close()
    assert held[rowid["both"]] == pytest.approx(1.0)
    assert 0.0 < held[rowid["trip-0"]] < 0.5  # "trip" is in every memory, "lisbon" in one


def test_only_a_question_about_the_person_looks_for_their_own_words() -> None:
    assert person.asks_about_the_person("where does the user live now")
    assert person.asks_about_the_person("which editor should I use")
    assert not person.asks_about_the_person("how do users log in")
    assert not person.asks_about_the_person("why do the I/O workers stall")
    assert not person.asks_about_the_person("When did Caroline go to the support group?")
    assert person.in_their_own_words("Our dog Biscuit needs walking at 6.")
    assert person.in_their_own_words("I'm on holiday in Japan until the 20th.")
    assert not person.in_their_own_words("Use async/await for I/O-bound operations")
    assert vectors.first_person("what user sessions expire") == "what user sessions expire"


def test_a_question_about_the_user_is_embedded_in_the_first_person() -> None:
    assert vectors.first_person("where does the user live now") == "where does I live now"
    assert vectors.first_person("what is the user's job") == "what is my job"
    assert vectors.first_person("how do users log in") == "how do users log in"


def test_a_query_whose_matches_are_all_retracted_says_so(store_path: Path) -> None:
    store = make_store(store_path)
    add_all(store, [memory("graf", "Grafana dashboards", "Grafana dashboards live in the obs folder")])
    store.retract("graf")
    index.ensure_fresh(store)

    result = quipu("--store", str(store.root), "search", "grafana dashboards", "--words-only")

    assert result.returncode == 0
    assert result.stdout.strip() == ("No memories match: every memory it matches is retracted "
                                     "(`quipu list --status retracted` lists them).")
