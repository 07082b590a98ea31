"""Recall ranking on a small realistic store: ranked ids for real-looking prompts, silence otherwise."""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from quipu.index import index
from quipu.prompt import query
from quipu.prompt import recall
from quipu.prompt import inject
from quipu.prompt import scoring
from quipu.prompt import indexread
from quipu.store.store import Store
from testing.fixtures import add_all, example_store, make_store, memory

FIXTURES = Path(__file__).parent / "fixtures" / "recall"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return example_store(tmp_path_factory.mktemp("shop") / "store")


def ranked(store: Store, prompt: str, context: str = "", **options: object) -> list[str]:
    db = index.open_fresh(store)
    try:
        return [h.id for h in recall.recall(db, prompt, context, recall.Options(**options)).hits]  # type: ignore[arg-type]
    finally:
        db.close()


def test_pasted_stack_trace_finds_the_note_about_that_error(shop: Store) -> None:
    prompt = (
        "I'm getting this when I open the orders page:\n```\nTraceback (most recent call last):\n"
        '  File "/home/dev/shop/src/api/views.py", line 42, in render\n    return json.dumps(payload)\n'
        "TypeError: Object of type datetime is not JSON serializable\n```\ncan you fix it?"
    )
    assert ranked(shop, prompt)[0] == "datetime-json"


def test_pasted_url_and_symptom_find_the_incident(shop: Store) -> None:
    prompt = "check https://github.com/acme/shop/pull/412 — it bumps gunicorn again, will nginx give us 502s like last time?"
    assert ranked(shop, prompt)[0] == "nginx-502"


def test_multi_clause_prompt_about_deploying_finds_both_deploy_memories(shop: Store) -> None:
    prompt = (
        "I want to deploy the hotfix to production myself this afternoon; remind me how we deploy "
        "and whether I need the dry run first, since the release workflow is slow today"
    )
    assert set(ranked(shop, prompt)) == {"deploy-procedure", "deploy-accident"}


def test_paraphrase_alias_matches_words_the_note_never_uses(shop: Store) -> None:
    assert ranked(shop, "am I about to nuke production with this?")[0] == "deploy-accident"


def test_screenshot_placeholder_is_not_a_topic(shop: Store) -> None:
    assert ranked(shop, "[Image #1] [Pasted text #2 +40 lines] what is this?") == []
    assert ranked(shop, "[Image #1] why does postgres refuse the connection like this") == ["postgres-port"]


def test_api_never_matches_rapid(shop: Store) -> None:
    hits = ranked(shop, "what is the API rate limit again", limit=5, min_score=0)
    assert hits[0] == "billing-api-limits"
    assert "rapid-prototyping" not in hits


def test_words_match_by_stem_not_by_substring(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory("m-rapid", "Rapid iteration", "we iterate rapidly"), memory("m-deploys", "Deploys", "deploys happen at noon")])
    assert ranked(store, "api", min_score=0) == []
    assert ranked(store, "when do we deploy", min_score=0) == ["m-deploys"]


def test_superseded_memory_ranks_below_its_successor_and_is_labelled(shop: Store) -> None:
    db = index.open_fresh(shop)
    try:
        hits = recall.recall(db, "which database host do we use", "", recall.Options(limit=5, min_score=0)).candidates
    finally:
        db.close()
    ids = [h.id for h in hits]
    assert ids.index("db-host-new") < ids.index("db-host-old")
    old = hits[ids.index("db-host-old")]
    assert old.status == "superseded" and "superseded by db-host-new" in old.label_text()


def test_unverified_label_is_shown_beside_the_hit(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory("tokens", "Instagram tokens rotate weekly", "A Lambda rotates the Instagram tokens weekly")])
    store.label("tokens", "unverified", detail="no such Lambda")
    index.ensure_fresh(store)
    db = index.open_fresh(store)
    try:
        hits = recall.recall(db, "how are instagram tokens rotated", "", recall.Options()).hits
        text = inject.format_context(hits)
    finally:
        db.close()
    assert [h.id for h in hits] == ["tokens"]
    assert "unverified" in text


def test_the_rarest_topic_terms_gather_and_at_most_three_carry_a_score(shop: Store) -> None:
    prompt = ("postgres docker compose port database host production deploy shop nginx gunicorn timeouts "
              "stripe billing figma prototyping tokens rotated")
    db = index.open_fresh(shop)
    try:
        result = recall.recall(db, prompt, "", recall.Options(min_score=0, limit=5))
    finally:
        db.close()
    chosen = [t for t, _df, c in result.terms if c]
    dfs = {t: df for t, df, _ in result.terms}
    topic = {t.text for t in query.extract_terms(prompt) if not t.generic}
    assert len(chosen) == min(recall.GATHER_TERMS, len([t for t in topic if dfs[t] > 0]))
    assert max(dfs[t] for t in chosen) <= min(dfs[t] for t, _, c in result.terms if not c and dfs[t] > 0 and t in topic)
    for hit in result.candidates:
        assert hit.bm25 <= sum(sorted(_summands(shop, prompt, hit.id).values(), reverse=True)[:3]) + 1e-9


def _summands(store: Store, prompt: str, memory_id: str) -> dict[str, float]:
    """Each gathered term's (idf-scaled) BM25 summand for one memory, recomputed term by term."""
    db = index.open_fresh(store)
    try:
        out = {}
        for term in [t for t, _df, c in recall.recall(db, prompt, "", recall.Options(min_score=0)).terms if c]:
            alone = recall.recall(db, term, "", recall.Options(min_score=0, limit=50, require_topic=False))
            for hit in alone.candidates:
                if hit.id == memory_id:
                    out[term] = hit.bm25
        return out
    finally:
        db.close()


def test_long_prompt_is_not_rewarded_for_length(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    common = "team meeting build review release sprint ticket board"
    add_all(store, [
        memory("kafka-lag", "Kafka consumer lag", "Consumer lag on the orders topic comes from the slow enrichment step."),
        memory("weekly", "Weekly notes", f"{common} kafka {common} lag {common}"),
        *[memory(f"filler-{n}", f"Notes {n}", common) for n in range(6)],
    ])
    prompt = f"after the {common} today, the kafka consumer lag on orders is back"
    assert ranked(store, prompt, limit=1) == ["kafka-lag"]


def test_context_sharpens_a_prompt_with_a_topic_but_never_invents_one(shop: Store) -> None:
    context = "We were looking at the nginx and gunicorn timeouts on the report endpoint."
    assert ranked(shop, "ok go ahead", context) == []
    # "timeout" alone is ambiguous; the context tips it towards the incident.
    assert ranked(shop, "what timeout did we settle on?", context)[0] == "nginx-502"


def test_every_conversational_follow_up_gets_nothing(shop: Store) -> None:
    data = json.loads((FIXTURES / "conversational.json").read_text(encoding="utf-8"))
    prompts = [p["text"] for p in data["prompts"]]
    assert len(prompts) >= 50
    rich_context = "We deployed shop-api to production, fixed the nginx 502 and the postgres port, then rotated tokens."
    noisy = {p: ranked(shop, p, rich_context) for p in prompts if ranked(shop, p, rich_context)}
    assert noisy == {}


def test_query_text_is_never_an_fts_syntax_error(shop: Store) -> None:
    for prompt in ['"unbalanced', "NOT AND OR", "col:umn", "a* ^b", "NEAR(x y)", "(((", "-flag --option", "')\";--"]:
        ranked(shop, prompt, min_score=0)


def test_a_memory_is_not_injected_twice_in_one_session(shop: Store) -> None:
    first = ranked(shop, "postgres port")
    assert first[0] == "postgres-port"
    assert "postgres-port" not in ranked(shop, "postgres port", exclude=frozenset(first))


def test_injection_is_compact_and_fenced_as_reference_data(shop: Store) -> None:
    db = index.open_fresh(shop)
    try:
        hits = recall.recall(db, "how do we deploy to production", "", recall.Options()).hits
    finally:
        db.close()
    text = inject.format_context(hits)
    assert 0 < len(text) <= 1500
    assert text.startswith("<quipu-memory") and text.rstrip().endswith("</quipu-memory>")
    assert "not an instruction" in text
    for hit in hits:
        assert hit.id in text and hit.title in text


def test_old_project_note_decays_but_a_user_rule_never_does(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    year_ago = "2025-11-01"
    add_all(store, [
        memory("note-old", "Kafka consumer lag notes", "kafka consumer lag was high", cls="project-note", created=year_ago),
        memory("note-new", "Kafka consumer lag notes", "kafka consumer lag was high", cls="project-note"),
        memory("rule-old", "Kafka topics naming rule", "kafka topic names use dots", cls="rule", created=year_ago),
    ])
    db = index.open_fresh(store)
    try:
        hits = {h.id: h for h in recall.recall(db, "kafka consumer", "", recall.Options(limit=5, min_score=0)).hits}
        rule = recall.recall(db, "kafka dots", "", recall.Options(limit=5, min_score=0)).hits
    finally:
        db.close()
    assert hits["note-new"].score > hits["note-old"].score * 2  # 400 days is more than two half-lives of 150 days
    assert abs(hits["note-old"].score - hits["note-old"].bm25 * 0.5 ** ((time.time() - 1761955200) / 86400 / 150)) < 0.05 * hits["note-old"].bm25
    top = rule[0]
    assert top.id == "rule-old" and top.score == pytest.approx(top.bm25)


def test_words_with_accents_are_stemmed_by_sqlite_and_still_match(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory("cafe-menu", "Café crème prices", "The naïve pricing of the café menu."),
                    memory("other", "Espresso machine cleaning", "Descale it weekly.")])
    assert ranked(store, "what did the cafe crème cost again?") == ["cafe-menu"]
    assert ranked(store, "the Café's naïve prices") == ["cafe-menu"]


def test_an_index_from_before_the_frequency_table_still_answers_the_same(shop: Store, tmp_path: Path) -> None:
    prompt = "why does postgres refuse the connection on the default port"
    expected = ranked(shop, prompt)
    legacy = tmp_path / "legacy.sqlite"
    legacy.write_bytes(shop.index_path.read_bytes())
    with sqlite3.connect(legacy) as db:
        db.execute("DROP TABLE term_df")
    db = indexread.open_index(str(legacy))
    try:
        assert [h.id for h in recall.recall(db, prompt, "", recall.Options()).hits] == expected
        assert expected[0] == "postgres-port"
    finally:
        db.close()


def test_ln_is_the_natural_logarithm() -> None:
    import math
    import random

    rng = random.Random(3)
    for x in [1.0, 2.0, 0.5, 1e-9, 3.7e12, 1 + 1e-12, *(10 ** rng.uniform(-12, 12) for _ in range(2000))]:
        assert scoring.ln(x) == pytest.approx(math.log(x), rel=1e-14, abs=1e-15)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            scoring.ln(bad)


def test_the_excerpt_shows_the_part_of_the_body_where_the_terms_meet() -> None:
    body = ("Background that says nothing much. " * 20 + "Deploys of shop-api go through the blue green pipeline; "
            "a deployment needs a dry run first. " + "Unrelated closing words. " * 20 + "One more pipeline mention.")
    text = inject.excerpt(body, ["deploy", "pipelin"])
    assert text.startswith("… ") and text.endswith(" …")
    assert "Deploys of shop-api go through the blue green pipeline" in text and len(text.split()) <= 30
    assert inject.excerpt(body, ["rapid"]).startswith("Background")  # nothing matches: the start
    assert inject.excerpt("api and rapid", ["rapid"]) == "api and rapid"
    assert inject.excerpt("short", ["short"]) == "short"


def _tour_commands() -> tuple[list[str], str]:
    """The README tour's `quipu add` (its arguments) and its `quipu recall` prompt, as written there."""
    import shlex

    text = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    tour = text.split("## A short tour", 1)[1].split("```", 2)[1]
    lines = [line.split("  #", 1)[0].strip().removeprefix("$ ") for line in tour.replace("\\\n", " ").splitlines()]
    add = next(line for line in lines if line.startswith("quipu add "))
    asked = next(line for line in lines if line.startswith("quipu recall "))
    return shlex.split(add)[1:], shlex.split(asked)[2]


def test_the_readme_tour_recall_example_recalls_the_memory_added_before_it(tmp_path: Path) -> None:
    from testing.fixtures import quipu as run_quipu

    add, prompt = _tour_commands()
    store = ["--store", str(tmp_path / "store")]
    assert run_quipu(*store, "init").returncode == 0
    added = run_quipu(*store, *add, "--json")
    assert added.returncode == 0, added.stderr
    memory_id = json.loads(added.stdout)["id"]
    found = run_quipu(*store, "recall", prompt, "--json")
    assert found.returncode == 0, found.stderr
    assert [h["id"] for h in json.loads(found.stdout)["hits"]] == [memory_id]


def test_an_abbreviation_and_its_long_form_are_one_term_both_ways(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [
        memory("k8s-long", "Kubernetes upgrades", "Upgrade the Kubernetes cluster one node pool at a time."),
        memory("prod-short", "Hotfix rule", "Hotfixes go to prod only from the release branch, never from main."),
        memory("other", "Espresso machine", "Descale it weekly."),
    ])
    assert ranked(store, "how do we upgrade the k8s cluster?") == ["k8s-long"]
    assert ranked(store, "can a hotfix go to production straight from main?")[0] == "prod-short"
    assert ranked(store, "kubernetes node pool") == ["k8s-long"]
    for short, long in (("prod", "production"), ("k8s", "kubernetes"), ("db", "database"), ("repo", "repository"),
                        ("config", "configuration"), ("auth", "authentication"), ("env", "environment"),
                        ("deps", "dependencies"), ("perf", "performance")):
        assert query.forms_of(short) == query.forms_of(long) and long in query.forms_of(short)
        assert query.is_generic(short) == query.is_generic(long), short


def test_a_memory_s_short_form_is_found_by_the_long_one_and_counts_once(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory("db-note", "Nightly db snapshot", "The db snapshot runs at 02:00 from the replica."),
                    memory("other", "Standup time", "Standup is at 09:30.")])
    db = index.open_fresh(store)
    try:
        result = recall.recall(db, "when does the database snapshot run? the db one", "", recall.Options())
    finally:
        db.close()
    assert [h.id for h in result.hits] == ["db-note"]
    chosen = [t for t, _df, c in result.terms if c]
    assert not {"db", "database"} <= set(chosen)  # one term, not two


def test_an_alias_said_whole_is_evidence_even_in_everyday_words(shop: Store) -> None:
    assert ranked(shop, "how do we ship to production?") == ["deploy-procedure"]
    assert ranked(shop, "remind me how we ship to prod") == ["deploy-procedure"]
    assert ranked(shop, "ok ship it to production") == []  # no question, no topic: the index is not even opened
    assert ranked(shop, "did it ship?") == []


def test_a_question_inside_a_longer_prompt_is_a_question() -> None:
    from quipu.prompt import evidence

    assert evidence.is_question("hey, before I push this to prod can you remind me what the deploy process is? "
                                "I think there was a gate")
    assert evidence.is_question("remind me how we deploy the api")
    assert evidence.is_question("Quick one. Where do the fixtures live? Asking for the new test")
    assert not evidence.is_question("ok, go ahead and continue with the plan")
    assert not evidence.is_question("see https://example.com/x?a=1 and fix the parser")
    long_request = " ".join(["word"] * 40) + " what is it? more"
    assert not evidence.is_question(long_request)
    assert all(query.is_generic(w) for w in ("remind", "remember", "tell", "forgot"))


def test_common_terms_read_a_bounded_number_of_rows_and_still_find_the_memory(tmp_path: Path) -> None:
    """In a large store every word of the prompt is in thousands of memories: gathering reads
    the rarest term's best rows (GATHER_ROWS at most), and the more common ones only where it
    matched."""
    from testing.fixtures import bulk_store

    filler = [memory(f"f{n:04d}", f"Note {n}", f"build cache layer {'worker' if n % 2 else 'queue'} notes {n}")
              for n in range(scoring.GATHER_WHOLE_STORE + 200)]
    target = memory("target", "Build cache layer worker queue", "The build cache layer worker queue drains at night.")
    store, _count = bulk_store(tmp_path / "s", [*filler, target], checkout=False)
    index.ensure_fresh(store)
    db = index.open_fresh(store)
    try:
        terms = ["worker", "queue", "build", "cache", "layer"]
        df = {t: db.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?", (t,)).fetchone()[0]
              for t in terms}
        assert min(df.values()) > scoring.GATHER_ROWS
        terms.sort(key=lambda t: df[t])
        matches = scoring.term_matches(db, terms, df, {}, len(filler) + 1)
        assert len(matches.summands) <= scoring.TERM_READ_LIMIT
        assert matches.gathered == terms[:1]
        rowid = db.execute("SELECT rowid FROM memories WHERE id = 'target'").fetchone()[0]
        assert set(matches.summands[rowid]) == set(terms)
        hits = recall.recall(db, "why does the build cache layer worker queue stall", "",
                             recall.Options(min_score=0, require_topic=False)).candidates
    finally:
        db.close()
    assert hits[0].id == "target"


def test_self_updating_facts_take_one_slot_and_facts_a_person_wrote_are_not_capped(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [
        memory("fact-maria-s-employer", "Maria's employer: Acme Robotics", "Current: Acme Robotics (since 2026-03-01)",
               cls="fact"),
        memory("fact-maria-s-team", "Maria's team: Acme Robotics firmware", "Current: firmware (since 2026-03-01)",
               cls="fact"),
        memory("replica-port", "The Postgres read replica listens on port 6433",
               "Reports read from the Postgres replica on port 6433, never the primary.", cls="fact"),
        memory("primary-port", "The Postgres primary listens on port 5433",
               "Writes go to the Postgres primary on port 5433 (compose maps it from 5432).", cls="fact"),
    ])
    # Two facts a person wrote both answer; a self-updating fact note takes one slot of two.
    assert set(ranked(store, "which port do the postgres primary and the replica listen on?")) == {
        "replica-port", "primary-port"}
    shown = ranked(store, "does maria still work at acme robotics?")
    assert len([i for i in shown if i.startswith("fact-")]) == 1


def test_a_follow_up_that_opens_by_agreeing_is_silent_where_a_question_recalls(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory("no-review-talk", "Do not narrate change history in code comments",
                           "Comments describe the code as it is, never the reviewer or what changed.",
                           cls="rule", aliases=["comments that address reviewers", "replying to review in code"])])
    assert ranked(store, "how should I address the review comments?") == ["no-review-talk"]
    for follow_up in ("yes, address the review comments", "ok address the review comments",
                      "sounds good, address the review comments", "oui, address the review comments"):
        assert ranked(store, follow_up) == [], follow_up


def test_a_memory_superseded_twice_names_the_newest_one_in_recall_and_search(store_path: Path) -> None:
    """stg-1 superseded by stg-2, itself superseded by stg-3: what is shown of stg-1 sends the
    reader to stg-3, the one in force, in the hook's answer and in ``quipu search``."""
    from quipu.commands.search import search

    store = make_store(store_path)
    add_all(store, [memory(f"stg-{n}", f"Staging db host v{n}", f"The staging db host is db-stage-{n}.internal")
                    for n in (1, 2, 3)])
    store.supersede("stg-1", "stg-2")
    store.supersede("stg-2", "stg-3")
    index.ensure_fresh(store)
    db = indexread.open_index(str(index.index_file(store)))

    found = recall.recall(db, "what is the staging db host?", options=recall.Options(limit=3))
    listed = search(store, "staging db host").hits

    labels = {h.id: h.label_text() for h in found.hits}
    assert found.hits[0].id == "stg-3"
    assert all(labels[i] == "superseded by stg-3" for i in ("stg-1", "stg-2") if i in labels) and len(labels) >= 2
    assert "superseded by stg-3" in inject.format_context(found.hits)
    assert {h.id: h.superseded_by for h in listed} == {"stg-3": None, "stg-2": "stg-3", "stg-1": "stg-3"}


def test_a_superseded_memory_is_never_shown_without_what_replaced_it(store_path: Path) -> None:
    """The prompt's words find only the outdated rule; the rule in force, which shares none of
    them, is shown first, the outdated one after it, within the limit, and not again in a session
    that was shown it already."""
    store = make_store(store_path)
    add_all(store, [memory("tdd-old", "TDD for payments", "Write tests first; TDD is non-negotiable for the payments service"),
                    memory("tdd-new", "Testing policy", "Code may land before its checks now")])
    store.supersede("tdd-old", "tdd-new")
    index.ensure_fresh(store)
    db = indexread.open_index(str(index.index_file(store)))
    prompt = "should I write tests first for the payments service TDD?"

    found = recall.recall(db, prompt)
    alone = recall.recall(db, prompt, options=recall.Options(limit=1))
    seen = recall.recall(db, prompt, options=recall.Options(exclude=frozenset({"tdd-new"})))

    assert [h.id for h in found.hits] == ["tdd-new", "tdd-old"]
    assert "Code may land before its checks now" in inject.format_context(found.hits)
    assert [h.id for h in alone.hits] == ["tdd-new"]
    assert "tdd-new" not in [h.id for h in seen.hits] and "tdd-old" in [h.id for h in seen.hits]
    store.retract("tdd-new")
    index.ensure_fresh(store)
    db = indexread.open_index(str(index.index_file(store)))
    assert "tdd-new" not in [h.id for h in recall.recall(db, prompt).hits]
