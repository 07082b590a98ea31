"""`quipu review`: the queue of tensions and findings, resolved by a person, each resolution a commit."""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from quipu.index import index
from quipu.curate import review
from quipu.model import Budget, ScriptedModel
from quipu.store.store import Store
from quipu.curate.sweep import run_sweep
from testing.fixtures import add_all, git, make_store, memory, quipu

FIXTURES = Path(__file__).parent / "fixtures" / "curate"
ARTICLE = json.loads((FIXTURES / "article_cases.json").read_text())
FAKE_MODEL = f"command:{shlex.quote(sys.executable)} {shlex.quote(str(FIXTURES / 'fake_model.py'))}"


def _case(pair_start: str) -> dict[str, Any]:
    return next(c for c in ARTICLE["cases"] if c["pair"][0] == pair_start)


def queued_store(path: Path, *starts: str) -> Store:
    """A store holding the article cases named, swept once by a model answering confidently wrong."""
    cases = [_case(s) for s in starts]
    ids = {i for c in cases for i in c["pair"]}
    store = make_store(path)
    add_all(store, [memory(m["id"], m["title"], m["body"], cls=m["class"], topics=m["topics"],
                           entities=m["entities"], created=m["created"]) for m in ARTICLE["memories"] if m["id"] in ids])
    answers = {"|".join(sorted(c["pair"])): c["answer"] for c in cases}

    def respond(prompt: str, schema: dict[str, Any], purpose: str) -> Any:
        key = "|".join(sorted(i for i in ids if f'<memory id="{i}">' in prompt))
        return answers.get(key, {"verdict": "unrelated", "winner": "", "loser": "", "confidence": 0.5,
                                 "covered_claims": [], "loser_claims": [], "full_scope": False, "reason": ""})

    run_sweep(store, ScriptedModel(responder=respond), Budget())
    return store


def env(store: Store) -> dict[str, str]:
    return {"QUIPU_STORE": str(store.root)}


def status(store: Store, memory_id: str) -> str:
    index.ensure_fresh(store)
    return str(index.rows(store, "SELECT status FROM memories WHERE id = ?", (memory_id,))[0]["status"])


def test_review_lists_both_memories_side_by_side(tmp_path: Path) -> None:
    store = queued_store(tmp_path / "store", "perm-rule")
    shown = quipu("review", env=env(store))
    assert shown.returncode == 0, shown.stderr
    assert "tension: supersedes (confidence 0.93); guards failed: class" in shown.stdout
    assert any("loser: perm-rule" in line and "winner: cloud-ref" in line for line in shown.stdout.splitlines())
    assert any("rule, created" in line and "reference, created" in line for line in shown.stdout.splitlines())
    assert "1 open item." in shown.stdout


def test_review_json_carries_the_verdict_guards_and_both_records(tmp_path: Path) -> None:
    store = queued_store(tmp_path / "store", "atlas-cdn", "runbook-map")
    items = json.loads(quipu("review", "--json", env=env(store)).stdout)
    assert {(i["memory"], i["other"]) for i in items} == {("atlas-cdn", "beacon-release"), ("prod-runbook", "runbook-map")}
    cdn = next(i for i in items if i["memory"] == "atlas-cdn")
    assert cdn["status"] == "open" and cdn["verdict"] == "supersedes" and cdn["confidence"] == 0.88
    assert cdn["guards"]["overlap"]["passed"] is False and "cloudfront" in cdn["guards"]["overlap"]["detail"]
    assert cdn["memory_record"]["title"] == "Atlas serves its static assets from CloudFront"
    assert cdn["other_record"]["id"] == "beacon-release" and cdn["other_record"]["current_status"] == "active"


def test_accept_supersedes_the_loser_in_one_commit_that_undo_reverts(tmp_path: Path) -> None:
    store = queued_store(tmp_path / "store", "open-decisions")
    (item,) = review.items(store)
    before = git(store.root, "rev-parse", "HEAD^{tree}")
    done = quipu("review", "accept", item.review_id, "--reason", "the list is stale anyway", env=env(store))
    assert done.returncode == 0, done.stderr
    assert "open-decisions is now superseded by ledger-decided" in done.stdout
    assert status(store, "open-decisions") == "superseded"
    (entry,) = store.log(limit=1)
    assert entry.trailers["Quipu-Review"] == item.review_id and entry.action == "supersede"
    assert "Quipu-Sweep" not in entry.trailers  # a person's decision is not part of the sweep
    assert review.items(store) == []
    assert quipu("review", env=env(store)).stdout.strip() == "Nothing to review."
    assert quipu("undo", entry.commit, env=env(store)).returncode == 0
    assert git(store.root, "rev-parse", "HEAD^{tree}") == before
    assert [i.review_id for i in review.items(store)] == [item.review_id]  # open again
    assert status(store, "open-decisions") == "active"


def test_reject_closes_the_item_and_the_pair_is_not_asked_again(tmp_path: Path) -> None:
    store = queued_store(tmp_path / "store", "perm-rule")
    (item,) = review.items(store)
    done = quipu("review", "reject", item.review_id[:6], "--json", env=env(store))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["resolution"] == "reject"
    assert status(store, "perm-rule") == "active" and status(store, "cloud-ref") == "active"
    (closed,) = review.items(store, include_closed=True)
    assert closed.resolution == "reject"
    assert run_sweep(store, ScriptedModel(), Budget()).sent == 0  # an empty script would fail if asked


def test_rejecting_a_duplicate_removes_its_label_and_accepting_one_supersedes_it(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    body = "Snapshot the production database before every schema migration, no exceptions."
    add_all(store, [memory("orig", "Snapshot first", body, created="2026-01-01"),
                    memory("copy-1", "Snapshot first", body, created="2026-02-01"),
                    memory("copy-2", "Snapshot before migrations", body, created="2026-03-01")])
    run_sweep(store, None, Budget())
    items = {i.memory: i for i in review.items(store)}
    assert set(items) == {"copy-1", "copy-2"} and all(i.kind == "duplicate" for i in items.values())
    review.reject(store, items["copy-2"].review_id)
    review.accept(store, items["copy-1"].review_id)
    index.ensure_fresh(store)
    rows = {r["id"]: (r["status"], r["labels"]) for r in index.rows(store, "SELECT id, status, labels FROM memories")}
    assert rows == {"orig": ("active", ""), "copy-1": ("superseded", "duplicate"), "copy-2": ("active", "")}


def test_resolving_twice_or_an_unknown_id_is_refused_with_the_fix(tmp_path: Path) -> None:
    store = queued_store(tmp_path / "store", "perm-rule")
    (item,) = review.items(store)
    assert quipu("review", "reject", item.review_id, env=env(store)).returncode == 0
    again = quipu("review", "accept", item.review_id, env=env(store))
    assert again.returncode == 1 and "already resolved" in again.stderr and "quipu undo" in again.stderr
    unknown = quipu("review", "accept", "rv-nope", env=env(store))
    assert unknown.returncode == 1 and "no review item" in unknown.stderr and "quipu review" in unknown.stderr
    missing = quipu("review", "accept", env=env(store))
    assert missing.returncode == 1 and "needs the item's id" in missing.stderr


@pytest.mark.parametrize("command", ["sweep", "review", "session-end", "pre-compact"])
def test_every_new_command_has_help(command: str) -> None:
    done = quipu(command, "--help")
    assert done.returncode == 0 and len(done.stdout) > 200


def test_accepting_an_item_whose_winner_was_retracted_or_now_replaced_by_the_loser_is_refused(tmp_path: Path) -> None:
    """Every writer of a supersession refuses one that would leave neither memory current, a
    review accepted as `quipu supersede` does."""
    store = queued_store(tmp_path / "store", "open-decisions")
    (item,) = review.items(store)
    assert quipu("retract", item.other, env=env(store)).returncode == 0
    before = git(store.root, "rev-parse", "HEAD")

    refused = quipu("review", "accept", item.review_id, env=env(store))

    assert refused.returncode == 1 and f"{item.other} is retracted" in refused.stderr
    assert f"quipu review reject {item.review_id}" in refused.stderr
    assert git(store.root, "rev-parse", "HEAD") == before and status(store, item.memory) == "active"
    assert quipu("undo", "--memory", item.other, env=env(store)).returncode == 0
    assert quipu("supersede", item.other, item.memory, env=env(store)).returncode == 0
    looped = quipu("review", "accept", item.review_id, env=env(store))
    assert looped.returncode == 1 and f"{item.other} is itself superseded by {item.memory}" in looped.stderr
    assert [i.review_id for i in review.items(store)] == [item.review_id]  # still open


def test_the_library_refuses_a_supersession_by_a_retracted_memory_for_every_caller(tmp_path: Path) -> None:
    from quipu.errors import ConflictError

    store = make_store(tmp_path / "store")
    add_all(store, [memory("db-old", "Database host", "The database host is db1.internal"),
                    memory("db-new", "Database host now", "The database host is db2.internal")])
    store.retract("db-new")
    head = git(store.root, "rev-parse", "HEAD")
    with pytest.raises(ConflictError, match="db-new is retracted"):
        store.supersede("db-old", "db-new", sweep="sw-1")
    assert git(store.root, "rev-parse", "HEAD") == head
