"""Consistency across boundaries: profile against store, rules against CLAUDE.md, queued for review."""
from __future__ import annotations

import json
from pathlib import Path

from quipu.curate import consistency
from quipu.capture import facts
from quipu.capture import profile
from quipu.curate import review
from quipu.store.store import Store
from testing.fixtures import add_all, make_store, memory, quipu


def store_with_rules(path: Path) -> Store:
    store = make_store(path)
    add_all(store, [
        memory("no-force-push", "The user never force-pushes to main",
               "Force-pushing to main is off limits; history on main is shared.", cls="rule"),
        memory("tabs-pref", "The user prefers tabs for indentation in Go files", cls="preference"),
        memory("line-length", "Python line length in shop-api is 100 characters", cls="rule"),
        memory("deploy-note", "Deploys of shop-api go through CI", cls="rule"),
    ])
    return store


def write_claude_md(project: Path, text: str) -> None:
    project.mkdir(parents=True, exist_ok=True)
    (project / "CLAUDE.md").write_text(text, encoding="utf-8")


def test_a_rule_saying_never_against_claude_md_saying_always_is_a_tension(store_path: Path, tmp_path: Path) -> None:
    store = store_with_rules(store_path)
    project = tmp_path / "shop"
    write_claude_md(project, "# shop\n\n- Always force-push to main after rebasing a feature.\n"
                             "- Run `make test` before committing.\n\n```\nnever force-push to main\n```\n")

    tensions = consistency.claude_md_tensions(store, project)

    assert [(t.memory, t.why) for t in tensions] == [("no-force-push", "negation")]
    assert tensions[0].where == "CLAUDE.md:3"  # the event is shared: it names no local folder
    assert str(tmp_path) not in json.dumps(tensions[0].event("rv-1"))


def test_opposite_values_and_different_numbers_are_tensions(store_path: Path, tmp_path: Path) -> None:
    store = store_with_rules(store_path)
    project = tmp_path / "shop"
    write_claude_md(project, "Indentation in Go files uses spaces.\nPython line length in shop-api is 88 characters.\n")

    found = {(t.memory, t.why) for t in consistency.claude_md_tensions(store, project)}

    assert found == {("tabs-pref", "opposite"), ("line-length", "number")}


def test_agreeing_and_unrelated_instructions_are_not_tensions(store_path: Path, tmp_path: Path) -> None:
    store = store_with_rules(store_path)
    project = tmp_path / "shop"
    write_claude_md(project, "Deploys of shop-api go through CI.\nThe user never force-pushes to main.\n"
                             "Use pnpm for JavaScript packages.\nNever commit secrets.\n")

    assert consistency.claude_md_tensions(store, project) == []


def test_a_profile_line_against_a_store_memory_is_a_tension(store_path: Path) -> None:
    store = store_with_rules(store_path)
    profile.add_line(store, "Working style", "The user force-pushes to main after every rebase")

    tensions = consistency.profile_tensions(store)

    assert [(t.memory, t.against, t.why) for t in tensions] == [("no-force-push", "profile", "negation")]


def test_a_profile_line_stating_a_facts_earlier_value_is_a_tension(store_path: Path) -> None:
    store = make_store(store_path)
    facts.set_fact(store, "the user's employer", "Initech", since="2023-06-15")
    facts.set_fact(store, "the user's employer", "Globex", since="2025-02-01")
    profile.add_line(store, "Identity", "The user's employer is Initech")

    tensions = consistency.profile_tensions(store)

    assert [(t.memory, t.why) for t in tensions] == [(facts.fact_id("the user's employer"), "earlier-value")]


def test_contradictions_are_queued_once_and_listed_by_the_review_queue(store_path: Path, tmp_path: Path) -> None:
    store = store_with_rules(store_path)
    project = tmp_path / "shop"
    write_claude_md(project, "Always force-push to main after rebasing. "
                             "Token: ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\n")

    first = consistency.queue(store, consistency.find_tensions(store, project))
    again = consistency.queue(store, consistency.find_tensions(store, project))

    assert len(first) == 1 and again == []
    items = review.items(store)
    assert [(i.kind, i.memory, i.other) for i in items] == [("consistency", "no-force-push", None)]
    assert "force-push to main" in items[0].event["detail"]
    assert "ghp_a1B2" not in json.dumps(items[0].event)  # CLAUDE.md text is redacted before it is committed
    assert store.log(limit=1)[0].action == "review"

    review.reject(store, items[0].review_id, reason="CLAUDE.md is older")
    assert review.items(store) == []


def test_profile_check_command_lists_and_queues(store_path: Path, tmp_path: Path) -> None:
    store = store_with_rules(store_path)
    project = tmp_path / "shop"
    write_claude_md(project, "- Always force-push to main after rebasing.\n")

    dry = quipu("--store", str(store.root), "profile", "check", "--project", str(project), "--dry-run")
    real = quipu("--store", str(store.root), "profile", "check", "--project", str(project), "--json")

    assert dry.returncode == 0 and "[negation] no-force-push" in dry.stdout and "not queued" in dry.stdout
    assert real.returncode == 0, real.stderr
    assert json.loads(real.stdout)["queued"] == 1
    listed = quipu("--store", str(store.root), "review")
    assert "consistency" in listed.stdout and "no-force-push" in listed.stdout


def test_the_daily_sweep_queues_claude_md_contradictions_once(store_path: Path, tmp_path: Path) -> None:
    store = store_with_rules(store_path)
    project = tmp_path / "shop"
    write_claude_md(project, "- Always force-push to main after rebasing a feature.\n")

    first = quipu("--store", str(store.root), "sweep", "--model", "none", "--project-root", str(project), "--json")
    second = quipu("--store", str(store.root), "sweep", "--model", "none", "--project-root", str(project), "--json")

    assert first.returncode == 0, first.stderr
    kinds = [f["kind"] for f in json.loads(first.stdout)["findings"]]
    assert "consistency-claude-md" in kinds
    items = [i for i in review.items(store) if i.kind == "consistency"]
    assert [i.memory for i in items] == ["no-force-push"]
    assert second.returncode == 0, second.stderr
    assert len([i for i in review.items(store) if i.kind == "consistency"]) == 1  # not queued twice
