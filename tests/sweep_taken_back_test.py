"""Decisions the sweep makes without a model, taken back by a person, stay taken back.

A finding's label and review item (duplicate, dead path) and a consistency item that a person
took back, by `quipu undo` in any of its forms, a plain `git revert` or removing the event file by
hand, are not made again by a later sweep while the memory is as it was; a memory that changed
since is judged again. What was taken back is read from git, so it holds in a fresh clone and with
the cache gone. Real `python -m quipu` processes on real stores and real git.
"""
from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from quipu.capture import profile
from quipu.index import index
from quipu.store.store import Store
from testing.fixtures import add_all, git, make_store, memory, quipu

STAGING = "Staging runs on Postgres 15 on db.internal"
NIGHTLY = "The nightly job config is `~/jobs/nightly.yaml`"
FAKE_MODEL = (f"command:{shlex.quote(sys.executable)} "
              f"{shlex.quote(str(Path(__file__).parent / 'fixtures' / 'curate' / 'fake_model.py'))}")


def three_notes(path: Path) -> Store:
    """The two copies of one note and a note naming a file that is not there."""
    store = make_store(path)
    add_all(store, [memory("db1", "Staging database", STAGING, created="2025-01-01T00:00:00Z"),
                    memory("db2", "Staging database", STAGING, created="2025-01-02T00:00:00Z"),
                    memory("nightly", "Nightly job config", NIGHTLY, created="2025-01-03T00:00:00Z")])
    return store


def sweep(store: Store, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = quipu("sweep", "--model", "none", "--json", *args, env={"QUIPU_STORE": str(store.root), **(env or {})})
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def run(store: Store, *args: str) -> str:
    done = quipu(*args, env={"QUIPU_STORE": str(store.root)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def found(report: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((f["kind"], f["memory"]) for f in report["findings"])


def left_alone(report: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((d["kind"], d["memory"]) for d in report["left_alone"]["decisions"])


def labels(store: Store) -> dict[str, str]:
    index.ensure_fresh(store)
    return {r["id"]: r["labels"] for r in index.rows(store, "SELECT id, labels FROM memories")}


def open_reviews(store: Store) -> list[tuple[str, str]]:
    return sorted((i["kind"], i["memory"]) for i in json.loads(run(store, "review", "--json")))


def head(store: Store) -> str:
    return git(store.root, "rev-parse", "HEAD").strip()


def take_back(how: str, store: Store, report: dict[str, Any]) -> None:
    """Take back every decision of the sweep ``report`` the way a person would."""
    commits = list(reversed(report["commits"]))  # newest first
    if how == "undo --sweep":
        run(store, "undo", "--sweep", report["sweep"])
    elif how == "undo COMMIT":
        for sha in commits:
            run(store, "undo", sha)
    elif how == "undo --memory":
        for item in report["findings"]:
            run(store, "undo", "--memory", item["memory"])
    elif how == "git revert":
        for sha in commits:
            git(store.root, "revert", "--no-edit", sha)
    else:  # by hand: the event files the sweep added, removed with git
        for sha in commits:
            added = git(store.root, "show", "--format=", "--name-only", sha).split()
            git(store.root, "rm", "-q", *added)
        git(store.root, "commit", "-q", "-m", "these are fine")


@pytest.mark.parametrize("how", ["undo --sweep", "undo COMMIT", "undo --memory", "git revert", "by hand"])
def test_findings_a_person_took_back_are_not_labelled_or_queued_again(tmp_path: Path, how: str) -> None:
    store = three_notes(tmp_path / "store")
    first = sweep(store)
    assert found(first) == [("dead-path", "nightly"), ("duplicate", "db2")]
    assert first["left_alone"] == {"taken_back": 0, "decisions": []}

    take_back(how, store, first)
    assert labels(store) == {"db1": "", "db2": "", "nightly": ""} and open_reviews(store) == []
    before = head(store)
    again = sweep(store)

    assert again["findings"] == [] and again["commits"] == []
    assert again["left_alone"]["taken_back"] == 2
    assert left_alone(again) == [("dead-path", "nightly"), ("duplicate", "db2")]
    assert {d["decision"] for d in again["left_alone"]["decisions"]} == set(first["commits"])
    assert head(store) == before
    assert labels(store) == {"db1": "", "db2": "", "nightly": ""} and open_reviews(store) == []


def test_one_decision_taken_back_leaves_the_rest_of_the_sweep_in_force(tmp_path: Path) -> None:
    store = three_notes(tmp_path / "store")
    first = sweep(store)
    duplicate = next(f for f in first["findings"] if f["kind"] == "duplicate")
    run(store, "undo", duplicate["commit"])

    again = sweep(store)

    assert again["findings"] == [] and left_alone(again) == [("duplicate", "db2")]
    assert labels(store) == {"db1": "", "db2": "", "nightly": "dead-path"}
    assert open_reviews(store) == [("dead-path", "nightly")]


def test_what_was_taken_back_is_read_from_git_in_a_fresh_clone_and_without_the_cache(tmp_path: Path) -> None:
    from quipu.sync import sync as sync_

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    store = three_notes(tmp_path / "store")
    first = sweep(store)
    take_back("git revert", store, first)
    sync_.set_remote(store, str(remote))
    sync_.sync(store)
    clone = sync_.clone(str(remote), tmp_path / "clone")[0]
    shutil.rmtree(store.cache_dir)

    for each in (clone, store):
        before = head(each)
        again = sweep(each)
        assert again["findings"] == [] and left_alone(again) == [("dead-path", "nightly"), ("duplicate", "db2")]
        assert head(each) == before and labels(each) == {"db1": "", "db2": "", "nightly": ""}


def test_a_memory_that_changed_after_the_take_back_is_judged_again(tmp_path: Path) -> None:
    store = three_notes(tmp_path / "store")
    take_back("undo --sweep", store, sweep(store))
    store.add(store.get("db2").with_changes(title="Staging database host"), overwrite=True, action="edit")
    store.add(store.get("nightly").with_changes(body=NIGHTLY + "; it runs at two."), overwrite=True, action="edit")

    again = sweep(store)

    assert found(again) == [("dead-path", "nightly"), ("duplicate", "db2")]
    assert again["left_alone"]["taken_back"] == 0
    assert labels(store) == {"db1": "", "db2": "duplicate", "nightly": "dead-path"}
    # Edited back to the very text the person took the label back from: the "no" holds again.
    take_back("undo COMMIT", store, again)
    store.add(store.get("db2").with_changes(title="Staging database"), overwrite=True, action="edit")
    assert ("duplicate", "db2") in left_alone(sweep(store))


def test_a_path_gone_since_the_take_back_is_a_new_finding(tmp_path: Path, quipu_env: Path) -> None:
    jobs = quipu_env / "jobs"
    jobs.mkdir()
    (jobs / "weekly.yaml").write_text("every: monday\n")
    store = make_store(tmp_path / "store")
    add_all(store, [memory("jobs", "Job configs", "Nightly: `~/jobs/nightly.yaml`; weekly: `~/jobs/weekly.yaml`")])
    first = sweep(store)
    assert [f["detail"] for f in first["findings"]] == ["missing: ~/jobs/nightly.yaml"]
    take_back("undo --sweep", store, first)
    assert sweep(store)["left_alone"]["taken_back"] == 1

    (jobs / "weekly.yaml").unlink()
    again = sweep(store)

    assert [f["detail"] for f in again["findings"]] == ["missing: ~/jobs/nightly.yaml, ~/jobs/weekly.yaml"]
    assert again["left_alone"]["taken_back"] == 0


def test_a_consistency_item_taken_back_is_not_queued_again_until_the_memory_changes(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("no-force-push", "The user never force-pushes to main",
                           "Force-pushing to main is off limits; history on main is shared.", cls="rule")])
    profile.add_line(store, "Working style", "The user force-pushes to main after every rebase")
    first = sweep(store)
    assert found(first) == [("consistency-profile", "no-force-push")]
    take_back("git revert", store, first)
    assert open_reviews(store) == []

    again = sweep(store)
    assert again["findings"] == [] and again["commits"] == []
    assert left_alone(again) == [("consistency", "no-force-push")] and open_reviews(store) == []

    rule = store.get("no-force-push")
    store.add(rule.with_changes(body=rule.body + " Ask before rewriting it."), overwrite=True, action="edit")
    assert found(sweep(store)) == [("consistency-profile", "no-force-push")]
    assert open_reviews(store) == [("consistency", "no-force-push")]


def test_aliases_the_sweep_gave_a_memory_do_not_make_it_judged_again(tmp_path: Path) -> None:
    """The model sweep labels db2 and gives it aliases in one run; a person takes back the label
    alone. The aliases are no change of what the memory says: the label stays off, and the model
    is not asked about the pair either (it would say db1 supersedes db2)."""
    store = three_notes(tmp_path / "store")
    (tmp_path / "aliases.json").write_text(json.dumps({"Staging database": ["preprod sql server"]}))
    supersedes = {"verdict": "supersedes", "winner": "db1", "loser": "db2", "confidence": 0.95,
                  "covered_claims": ["Postgres 15"], "loser_claims": ["Postgres 15"], "full_scope": True,
                  "reason": "same note"}
    (tmp_path / "answers.json").write_text(json.dumps({"db1|db2": supersedes}))
    seen = tmp_path / "seen.jsonl"
    env = {"QUIPU_STORE": str(store.root), "FAKE_MODEL_ALIASES": str(tmp_path / "aliases.json"),
           "FAKE_MODEL_ANSWERS": str(tmp_path / "answers.json"), "FAKE_MODEL_SEEN": str(seen)}
    first = sweep(store, "--model", FAKE_MODEL, env=env)
    assert ("duplicate", "db2") in found(first)
    assert store.get("db2").aliases == ("preprod sql server",)
    run(store, "undo", next(f["commit"] for f in first["findings"] if f["kind"] == "duplicate"))
    seen.unlink()

    again = sweep(store, "--model", FAKE_MODEL, env=env)

    assert ("duplicate", "db2") in left_alone(again) and again["applied"] == []
    assert labels(store)["db2"] == "" and store.get("db2").aliases == ("preprod sql server",)
    asked = [json.loads(line)["pair"] for line in seen.read_text().splitlines()] if seen.exists() else []
    assert "db1|db2" not in asked


def test_the_sweeps_summary_says_how_many_decisions_it_left_alone(tmp_path: Path) -> None:
    store = three_notes(tmp_path / "store")
    first = sweep(store)
    take_back("undo --sweep", store, first)

    text = quipu("sweep", "--model", "none", env={"QUIPU_STORE": str(store.root)})

    assert text.returncode == 0, text.stderr
    assert "deterministic pass: nothing; 2 left alone (a person took them back)" in text.stdout
