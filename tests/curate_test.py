"""The curator's passes: deterministic findings, candidate pairs, verdicts and the four guards.

The model is a ScriptedModel that answers confidently wrong (the article's failure cases); the
store, git and the index are real.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from quipu.index import index
from quipu.prompt import recall
from quipu.prompt import indexread
from quipu.curate import candidates
from quipu.curate.corpus import load
from quipu.curate.deterministic import find_dead_paths, find_duplicates, path_tokens
from quipu.curate.verdict import MIN_CONFIDENCE, SCHEMA, BadVerdict, Verdict, check_guards
from quipu.model import Budget, ScriptedModel, schema_errors
from quipu.store.store import Store
from quipu.curate.sweep import SweepOptions, run_sweep
from testing.fixtures import add_all, git, make_store, memory

FIXTURES = Path(__file__).parent / "fixtures" / "curate"
ARTICLE = json.loads((FIXTURES / "article_cases.json").read_text())
BAD = json.loads((FIXTURES / "bad_answers.json").read_text())


def build(path: Path, spec: dict[str, Any]) -> Store:
    store = make_store(path)
    add_all(store, [memory(m["id"], m["title"], m["body"], cls=m["class"], topics=m["topics"],
                           entities=m["entities"], created=m["created"]) for m in spec["memories"]])
    return store


def pair_ids(prompt: str) -> list[str]:
    return re.findall(r'<memory id="([^"]+)">', prompt)


def scripted(answers: dict[str, Any]) -> ScriptedModel:
    """Answers by pair ("a|b", ids sorted); any other pair is unrelated; asked for aliases, none."""
    def respond(prompt: str, schema: dict[str, Any], purpose: str) -> Any:
        if purpose == "enrich":
            return {"notes": []}
        ids = pair_ids(prompt)
        return answers.get("|".join(sorted(ids)), {
            "verdict": "unrelated", "winner": ids[0], "loser": ids[1], "confidence": 0.8,
            "covered_claims": [], "loser_claims": [], "full_scope": False, "reason": "different subjects"})
    return ScriptedModel(responder=respond)


def case_answers(cases: list[dict[str, Any]]) -> dict[str, Any]:
    return {"|".join(sorted(c["pair"])): c["answer"] for c in cases}


def status(store: Store, memory_id: str) -> str:
    return str(index.rows(store, "SELECT status FROM memories WHERE id = ?", (memory_id,))[0]["status"])


def tree(store: Store) -> str:
    return git(store.root, "rev-parse", "HEAD^{tree}").strip()


# ------------------------------------------------------------------ the article's cases


@pytest.mark.parametrize("case", ARTICLE["cases"], ids=[c["pair"][0] for c in ARTICLE["cases"]])
def test_article_case_ends_as_the_guarded_curator_should(tmp_path: Path, case: dict[str, Any]) -> None:
    spec = {"memories": [m for m in ARTICLE["memories"] if m["id"] in case["pair"]]}
    store = build(tmp_path / "store", spec)
    report = run_sweep(store, scripted(case_answers([case])), Budget())
    loser, winner = case["answer"]["loser"], case["answer"]["winner"]
    assert report.sent == 1
    if case["expect"] == "applied":
        assert [(a["loser"], a["winner"]) for a in report.applied] == [(loser, winner)]
        assert report.queued == []
        assert status(store, loser) == "superseded"
    else:
        assert report.applied == []
        assert [(q["loser"], q["winner"]) for q in report.queued] == [(loser, winner)]
        failed = sorted(name for name, ok in report.queued[0]["guards"].items() if not ok)
        assert failed == case["failed_guards"], case["case"]
        assert status(store, loser) == "active"
        assert status(store, winner) == "active"
    (entry,) = store.log(sweep=report.sweep_id)
    assert entry.trailers["Quipu-Verdict"] == "supersedes"
    assert entry.trailers["Quipu-Confidence"] == f"{case['answer']['confidence']:.2f}"
    passed = [g for g in ("confidence", "overlap", "class", "scope") if g not in case["failed_guards"]]
    assert entry.trailers["Quipu-Guards"] == ",".join(passed)


def test_whole_article_store_applies_exactly_the_right_supersession(tmp_path: Path) -> None:
    """The article's guarded sweep: one right supersession applied, the real tensions queued."""
    store = build(tmp_path / "store", ARTICLE)
    model = scripted(case_answers(ARTICLE["cases"]))
    report = run_sweep(store, model, Budget())
    assert [(a["loser"], a["winner"]) for a in report.applied] == [("vpn-old", "vpn-new")]
    queued = {(q["loser"], q["winner"]) for q in report.queued}
    assert queued == {(c["answer"]["loser"], c["answer"]["winner"]) for c in ARTICLE["cases"] if c["expect"] == "queued"}
    assert report.skipped == [] and report.stopped is None
    superseded = [r["id"] for r in index.rows(store, "SELECT id FROM memories WHERE status = 'superseded'")]
    assert superseded == ["vpn-old"]
    # Each decision is its own commit of this sweep; nothing was deleted.
    assert len(store.log(sweep=report.sweep_id)) == 1 + len(queued)
    assert len(list(store.iter_memory_files())) == len(ARTICLE["memories"])
    # The next sweep asks about nothing again: every pair is decided or cached as unrelated.
    again = run_sweep(store, model, Budget())
    assert again.sent == 0 and again.candidate_pairs == 0


def test_six_open_decisions_answered_as_partial_go_to_review(tmp_path: Path) -> None:
    spec = {"memories": [m for m in ARTICLE["memories"] if m["id"] in ("open-decisions", "ledger-decided")]}
    store = build(tmp_path / "store", spec)
    answer = {"verdict": "partial", "winner": "ledger-decided", "loser": "open-decisions", "confidence": 0.95,
              "loser_claims": ["Ledger store is open", "Tax provider is open"], "covered_claims": ["Ledger store is open"],
              "full_scope": False, "reason": "settles one of six"}
    report = run_sweep(store, scripted({"ledger-decided|open-decisions": answer}), Budget())
    assert report.applied == []
    assert [q["verdict"] for q in report.queued] == ["partial"]
    assert status(store, "open-decisions") == "active"


def test_a_supersession_that_passes_the_guards_is_undone_byte_for_byte(tmp_path: Path) -> None:
    store = build(tmp_path / "store", ARTICLE)
    before = tree(store)
    report = run_sweep(store, scripted(case_answers(ARTICLE["cases"])), Budget())
    assert tree(store) != before
    store.undo(sweep=report.sweep_id)
    assert tree(store) == before
    index.ensure_fresh(store)
    assert status(store, "vpn-old") == "active"
    # A decision a person undid is never re-applied by the next sweep.
    again = run_sweep(store, scripted(case_answers(ARTICLE["cases"])), Budget())
    assert again.applied == [] and again.queued == []
    assert tree(store) == before


def test_a_supersession_taken_back_with_a_plain_git_revert_is_not_re_applied(tmp_path: Path) -> None:
    """A person who reverts the sweep's commits with git itself, not `quipu undo`, has said "no"
    as clearly: the next sweep, with its verdict cache gone too, re-applies nothing."""
    store = build(tmp_path / "store", ARTICLE)
    before = tree(store)
    report = run_sweep(store, scripted(case_answers(ARTICLE["cases"])), Budget())
    commits = [entry.commit for entry in store.log(sweep=report.sweep_id)]
    assert commits and tree(store) != before
    for sha in commits:  # newest first, as `git revert` of a range would
        git(store.root, "revert", "--no-edit", sha)
    assert tree(store) == before
    for cached in store.cache_dir.glob("curate-*"):
        cached.unlink()
    index.ensure_fresh(store)
    again = run_sweep(store, scripted(case_answers(ARTICLE["cases"])), Budget())
    assert again.applied == [] and again.queued == []
    assert tree(store) == before


# ------------------------------------------------------------------ bad answers


def test_recorded_bad_answers_are_skipped_with_a_reason_and_change_nothing(tmp_path: Path) -> None:
    store = build(tmp_path / "store", BAD)
    before = git(store.root, "rev-parse", "HEAD").strip()
    report = run_sweep(store, scripted(BAD["answers"]), Budget())
    assert git(store.root, "rev-parse", "HEAD").strip() == before
    assert report.applied == [] and report.queued == []
    reasons = {"|".join(sorted(s["pair"])): s["reason"] for s in report.skipped}
    assert set(reasons) == set(BAD["expected_reasons"])
    for key, expected in BAD["expected_reasons"].items():
        assert expected in reasons[key]
    logged = [json.loads(line) for line in (store.cache_dir / "sweep.log").read_text().splitlines()]
    assert sorted("|".join(sorted(x["pair"])) for x in logged) == sorted(BAD["expected_reasons"])
    calls = [json.loads(x) for x in (store.cache_dir / "model-calls.jsonl").read_text().splitlines()]
    assert len([c for c in calls if c["purpose"] == "curate"]) == report.sent == 3
    # Skipped pairs are not decided: the next sweep asks about them again.
    assert run_sweep(store, scripted({}), Budget()).sent == 3


@pytest.mark.parametrize(("answer", "reason"), [
    ({"winner": "x", "loser": "a1b"}, "unknown memory id"),
    ({"loser": "zz9"}, "unknown memory id"),
    ({"winner": "a1b", "loser": "a1b"}, "both"),
    ({"confidence": -0.1}, "outside 0..1"),
    ({"confidence": float("nan")}, "outside 0..1"),
    ({"confidence": True}, "outside 0..1"),
])
def test_verdicts_that_cannot_be_acted_on(answer: dict[str, Any], reason: str) -> None:
    base = {"verdict": "supersedes", "winner": "a1b", "loser": "c2d", "confidence": 0.9, "covered_claims": [],
            "loser_claims": [], "full_scope": True, "reason": ""}
    with pytest.raises(BadVerdict, match=reason):
        Verdict.create({**base, **answer}, ("a1b", "c2d"))


def test_schema_is_the_fixed_verdict_shape() -> None:
    good = {"verdict": "partial", "winner": "a", "loser": "b", "confidence": 0.5, "covered_claims": [],
            "loser_claims": ["x"], "full_scope": False, "reason": "r"}
    assert schema_errors(good, SCHEMA) == []
    assert schema_errors({**good, "verdict": "delete"}, SCHEMA)
    assert schema_errors({k: v for k, v in good.items() if k != "full_scope"}, SCHEMA)
    assert schema_errors({**good, "extra": 1}, SCHEMA)


# ------------------------------------------------------------------ guards


def _entries(tmp_path: Path, a: dict[str, Any], b: dict[str, Any]) -> tuple[Any, Any]:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("mem-a", "A", "a", **a), memory("mem-b", "B", "b", **b)])
    corpus = load(store)
    return corpus.entries["mem-a"], corpus.entries["mem-b"]


def _verdict(**changes: Any) -> Verdict:
    values: dict[str, Any] = {"verdict": "supersedes", "winner": "mem-b", "loser": "mem-a", "confidence": 0.9,
                              "covered_claims": ["claim one", "Claim  two."], "loser_claims": ["Claim one", "claim two"],
                              "full_scope": True, "reason": ""}
    return Verdict.create({**values, **changes}, ("mem-a", "mem-b"))


def _failed(verdict: Verdict, a: Any, b: Any) -> list[str]:
    return [g.name for g in check_guards(verdict, b, a) if not g.passed]


def test_guards_pass_with_two_shared_topics_same_class_full_scope(tmp_path: Path) -> None:
    a, b = _entries(tmp_path, {"topics": ["VPN", "office network"]}, {"topics": ["vpn", "Office Network", "x"]})
    assert _failed(_verdict(), a, b) == []


def test_one_shared_technology_word_never_counts_as_subject_overlap(tmp_path: Path) -> None:
    a, b = _entries(tmp_path, {"topics": ["cdn"], "entities": ["CloudFront"]},
                    {"topics": ["release", "cdn"], "entities": ["cloudfront", "Beacon"]})
    assert _failed(_verdict(), a, b) == ["overlap"]  # one topic and one entity are not two of either


def test_confidence_below_the_threshold_blocks(tmp_path: Path) -> None:
    a, b = _entries(tmp_path, {"topics": ["t1", "t2"]}, {"topics": ["t1", "t2"]})
    assert _failed(_verdict(confidence=MIN_CONFIDENCE - 0.01), a, b) == ["confidence"]
    assert _failed(_verdict(confidence=MIN_CONFIDENCE), a, b) == []


def test_a_rule_and_an_event_never_supersede_each_other(tmp_path: Path) -> None:
    a, b = _entries(tmp_path, {"topics": ["t1", "t2"], "cls": "rule"}, {"topics": ["t1", "t2"], "cls": "event"})
    assert _failed(_verdict(), a, b) == ["class"]


@pytest.mark.parametrize("changes", [
    {"full_scope": False},
    {"covered_claims": ["claim one"]},  # says full scope, lists less: the claims decide
    {"loser_claims": [], "covered_claims": []},
])
def test_full_scope_needs_every_loser_claim_covered(tmp_path: Path, changes: dict[str, Any]) -> None:
    a, b = _entries(tmp_path, {"topics": ["t1", "t2"]}, {"topics": ["t1", "t2"]})
    assert _failed(_verdict(**changes), a, b) == ["scope"]


# ------------------------------------------------------------------ deterministic pass


def test_identical_memories_are_labelled_duplicates_of_the_oldest_and_queued(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    body = "Run the migrations with the migrate workflow before every release of the billing service."
    add_all(store, [
        memory("dup-orig", "Migrations before release", body, created="2026-01-01", topics=["release"]),
        memory("dup-copy", "Migrations before release", body, created="2026-02-01", topics=["release"]),
        memory("dup-body", "Another title, same long body", body, created="2026-03-01"),
        memory("short-a", "Short one", "TBD", created="2026-01-01"),
        memory("short-b", "Short two", "TBD", created="2026-01-02"),
    ])
    report = run_sweep(store, None, Budget())
    found = sorted((f["memory"], f["other"], f["detail"]) for f in report.findings)
    assert found == [("dup-body", "dup-orig", "same body as dup-orig"),
                     ("dup-copy", "dup-orig", "same text as dup-orig")]
    labels = {r["id"]: r["labels"] for r in index.rows(store, "SELECT id, labels FROM memories")}
    assert labels == {"dup-orig": "", "dup-copy": "duplicate", "dup-body": "duplicate", "short-a": "", "short-b": ""}
    assert all(status(store, m) == "active" for m in labels)  # labelled, never deleted or superseded
    assert len(store.log(sweep=report.sweep_id)) == 2
    assert run_sweep(store, None, Budget()).findings == []  # flagged once


def test_paths_that_no_longer_exist_are_labelled_dead_path(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("")
    (tmp_path / "home" / "notes").mkdir(parents=True)
    store = make_store(tmp_path / "store")
    add_all(store, [
        memory("live-paths", "Entry points", "The app starts in `src/app.py`; notes in ~/notes.", project=str(project)),
        memory("dead-paths", "Old entry points", "It used to start in `src/main.py` and read config/app.toml.",
               project=str(project)),
        memory("dead-home", "Scratch file", "Scratch notes are in ~/notes/gone.md now."),
        memory("no-root", "Relative only", "See docs/missing.md (no project root known)."),
        memory("other-box", "Laptop path", "Keys in /Users/someone/keys/id.pem on the old laptop."),
        memory("escape", "Outside", "Look at `../../../etc/shadow.bak` someday.", project=str(project)),
    ])
    report = run_sweep(store, None, Budget())
    found = {f["memory"]: f["detail"] for f in report.findings}
    assert set(found) == {"dead-paths", "dead-home"}
    assert found["dead-paths"].startswith("missing: src/main.py, config/app.toml")
    events = [e for _, e in store.events("dead-paths")]
    assert events[-1]["label"] == "dead-path" and events[-1]["paths"] == ["src/main.py", "config/app.toml"]
    # A project root on the command line judges memories that have none.
    report = run_sweep(store, None, Budget(), SweepOptions(project_root=project))
    assert [f["memory"] for f in report.findings] == ["no-root"]


def test_absolute_paths_are_checked_only_where_it_is_safe(tmp_path: Path) -> None:
    corpus_store = make_store(tmp_path / "store")
    add_all(corpus_store, [
        memory("abs-dead", "Dead absolute", "The old config was /usr/lib/quipu-test-gone/app.conf."),
        memory("abs-live", "Live absolute", "Python lives under /usr/lib/ on this box: `/usr/bin/env`."),
        memory("abs-tmp", "Volatile", "Socket at /tmp/quipu-gone/x.sock."),
        memory("abs-proc", "Proc", "Read /proc/quipu/none/status."),
    ])
    found = find_dead_paths(load(corpus_store), home=tmp_path / "home")
    assert [(f.memory, f.paths) for f in found] == [("abs-dead", ("/usr/lib/quipu-test-gone/app.conf",))]


def test_path_tokens_skip_prose_commands_and_urls() -> None:
    body = ("Run `make rollback` and/or check CI/CD; blue/green. See `src/a.py`, docs/b.md. /compact.\n"
            "https://example.com/x/y.html v1.2/3.4 `path/*.py` ~/n.md\n```\ncat /etc/x/y.conf\n```")
    assert path_tokens(body) == ["src/a.py", "docs/b.md", "~/n.md"]


# ------------------------------------------------------------------ candidate pairs


def test_candidates_come_from_shared_subjects_and_title_overlap_not_all_pairs(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    generic = [memory(f"gen-{i:03d}", f"Note {i} about thing{i}", f"body {i}", topics=["work"])
               for i in range(candidates.MAX_POSTING + 1)]
    add_all(store, [
        *generic,
        memory("tag-a", "Alpha", "x", topics=["kafka"]),
        memory("tag-b", "Beta", "y", topics=["kafka"]),
        memory("title-a", "Grafana dashboard for checkout latency", "x"),
        memory("title-b", "Checkout latency alerts in Grafana", "y"),
        memory("lonely", "Nothing shared here at all", "z"),
    ])
    pairs = candidates.candidate_pairs(store, load(store))
    keys = {(p.a, p.b) for p in pairs}
    assert ("tag-a", "tag-b") in keys
    assert ("title-a", "title-b") in keys
    assert not any("lonely" in k for k in keys)
    # "work" is too generic to pair on: the generic notes pair only as alike in meaning (their text is)
    assert not any(p.a.startswith("gen-") and p.b.startswith("gen-") and not p.close_in_meaning for p in pairs)
    n = len(generic) + 5
    assert len(pairs) <= candidates.PER_MEMORY * n < n * (n - 1) // 2


UNRELATED = [
    memory("tabs", "Go files are indented with tabs", "gofmt decides the indentation; never spaces.", topics=["go"]),
    memory("oncall", "Pager rotation changes on Mondays", "The on-call engineer hands over the pager at 10am Monday.",
           topics=["oncall"]),
    memory("colours", "Brand colours for the storefront", "Primary teal #0f766e, accent amber; no gradients.",
           topics=["design"]),
    memory("flaky", "Checkout integration tests are flaky", "Retry once with the rerun workflow before paging anyone.",
           topics=["ci"]),
    memory("cdn", "Images are served from CloudFront", "Product images go through the CDN with a one-day cache.",
           topics=["cdn"]),
]


def test_a_pair_saying_the_same_in_other_words_is_a_candidate_by_meaning(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [
        memory("backup-old", "Postgres backups run nightly", "The Postgres database is backed up every night at 2am.",
               created="2026-01-01"),
        memory("backup-new", "The primary DB is snapshotted each evening", "Each evening a snapshot of the database is taken.",
               created="2026-03-01"),
        *UNRELATED,
    ])
    pairs = candidates.candidate_pairs(store, load(store))
    # No topic, entity or title word in common: meaning alone relates them, and nothing else.
    assert [(p.a, p.b, p.shared, p.title_overlap, p.close_in_meaning) for p in pairs] == [
        ("backup-old", "backup-new", (), False, True)]
    assert pairs[0].score == candidates.MEANING_BONUS
    assert pairs[0].to_json()["close_in_meaning"] is True


def test_meaning_adds_to_a_pair_that_shares_a_subject_and_ranks_it_first(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [
        memory("backup-old", "Postgres backups run nightly", "The Postgres database is backed up every night at 2am.",
               topics=["ops"], created="2026-01-01"),
        memory("backup-new", "The primary DB is snapshotted each evening", "Each evening a snapshot of the database is taken.",
               topics=["ops"], created="2026-03-01"),
        memory("pager", "Pager rotation changes on Mondays", "The on-call engineer hands over the pager at 10am Monday.",
               topics=["ops"], created="2026-02-01"),
    ])
    pairs = candidates.candidate_pairs(store, load(store))
    assert [(p.a, p.b) for p in pairs][0] == ("backup-old", "backup-new")
    assert pairs[0].close_in_meaning and not any(p.close_in_meaning for p in pairs[1:])
    assert math.isclose(pairs[0].score - pairs[1].score, candidates.MEANING_BONUS)
    assert pairs[1:] == sorted(pairs[1:], key=lambda p: (-p.score, p.a, p.b))


def test_memories_alike_in_meaning_stay_within_the_linear_bound(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    alike = [memory(f"note-{i:02d}", f"Note {i} about thing{i}", f"body {i}") for i in range(40)]
    add_all(store, [*alike, *UNRELATED])
    first = candidates.candidate_pairs(store, load(store))
    n = len(alike) + len(UNRELATED)
    assert all(p.close_in_meaning for p in first) and len(first) >= len(alike)  # all alike in meaning, ...
    assert len(first) <= candidates.PER_MEMORY * n < n * (n - 1) // 2  # ... yet linear in the store
    assert not any({p.a, p.b} & {m.id for m in UNRELATED} for p in first)
    assert candidates.candidate_pairs(store, load(store)) == first  # the same store, the same list


def test_focus_limits_pairs_to_the_sessions_memories(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("s-a", "A", "x", topics=["t1"]), memory("s-b", "B", "y", topics=["t1"]),
                    memory("o-a", "C", "x", topics=["t2"]), memory("o-b", "D", "y", topics=["t2"])])
    pairs = candidates.candidate_pairs(store, load(store), focus=frozenset({"s-b"}))
    assert [(p.a, p.b) for p in pairs] == [("s-a", "s-b")]


def test_duplicates_found_only_within_focus(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("d-a", "Same", "same text", created="2026-01-01"),
                    memory("d-b", "Same", "same text", created="2026-01-02")])
    assert find_duplicates(load(store), focus=frozenset({"zzz"})) == []
    assert [f.memory for f in find_duplicates(load(store), focus=frozenset({"d-a"}))] == ["d-b"]


# ------------------------------------------------------------------ decay in ranking


def test_old_project_note_ranks_below_a_fresh_one_and_a_user_rule_never_decays(tmp_path: Path) -> None:
    now = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)

    def ago(days: int) -> str:
        return (now - dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")

    text = "Retry flaky integration tests once with the rerun workflow before paging anyone."
    store = make_store(tmp_path / "store")
    add_all(store, [
        memory("note-old", "Flaky integration tests", text, created=ago(400)),
        memory("note-new", "Flaky integration tests", text, created=ago(10)),
        memory("rule-old", "Flaky integration tests rule", text, cls="rule", origin="user", created=ago(400)),
    ])
    db = indexread.open_index(str(store.index_path))
    try:
        found = recall.recall(db, "which integration tests are flaky?", options=recall.Options(
            limit=5, min_score=0.0, now=now.timestamp()))
    finally:
        db.close()
    hits = {h.id: h for h in found.hits}
    order = [h.id for h in found.hits]
    assert order.index("note-new") < order.index("note-old")
    assert math.isclose(hits["note-old"].score / hits["note-old"].bm25, 0.5 ** (400 / 150), rel_tol=1e-6)
    assert math.isclose(hits["rule-old"].score, hits["rule-old"].bm25)  # a rule the user gave never decays
    assert store.get("note-old").status == "active"  # nothing expires out of the store


def test_a_memory_removed_by_hand_during_the_sweep_skips_its_verdict(tmp_path: Path) -> None:
    """A person's `git rm` while the model thinks: the verdict is skipped, nothing half-written."""
    spec = {"memories": [m for m in ARTICLE["memories"] if m["id"] in ("vpn-old", "vpn-new")]}
    store = build(tmp_path / "store", spec)
    (case,) = [c for c in ARTICLE["cases"] if c["pair"][0] == "vpn-old"]

    def respond(prompt: str, schema: dict[str, Any], purpose: str) -> Any:
        if purpose == "enrich":
            return {"notes": []}
        git(store.root, "rm", "-q", "memories/vp/vpn-new.md")
        git(store.root, "commit", "-q", "-m", "drop the new vpn note")
        return case["answer"]

    report = run_sweep(store, ScriptedModel(responder=respond), Budget())
    head = git(store.root, "log", "-1", "--format=%s").strip()
    assert head == "drop the new vpn note"
    assert report.applied == [] and report.queued == []
    (skipped,) = report.skipped
    assert "could not record the verdict" in skipped["reason"]
