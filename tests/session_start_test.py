"""SessionStart: the profile and the always-on rules, under a hard budget, nothing dropped silently."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from quipu import doctor
from quipu.claude import always_on
from quipu.capture import profile
from quipu.store.store import Store
from testing.fixtures import REPO_ROOT, add_all, make_store, memory, quipu, real_python


def oversized_store(path: Path) -> Store:
    store = make_store(path)
    lines = "\n".join(
        f"- {profile.PREFIXES[n % 4]}: The user has durable trait number {n} described at some length here"
        for n in range(30))
    store.commit({profile.PROFILE_PATH: f"# Profile\n\n{lines}\n".encode()}, "hand edit",
                 {"Quipu-Action": "edit", "Quipu-Memory": "profile"})
    rules = [
        memory(f"rule-{n:02d}", f"Standing rule {n}: releases of service {n} need a second reviewer",
               f"Service {n} is released only after a second reviewer signs off in the release issue.",
               cls="rule", always_on=True, description=f"Second reviewer required for service {n} releases")
        for n in range(50)
    ]
    add_all(store, rules)
    return store


def test_an_oversized_profile_and_fifty_always_on_rules_stay_within_the_budget_and_doctor_lists_the_rest(
    store_path: Path,
) -> None:
    store = oversized_store(store_path)

    layer = always_on.build(store)

    assert layer.tokens <= 1300 and len(layer.text) <= 1300 * 4
    assert len(layer.profile_lines) == 14  # the card's own cap
    left_rules = [item.ref for item in layer.left_out if item.kind == "rule"]
    assert left_rules and set(layer.rules) | set(left_rules) == {f"rule-{n:02d}" for n in range(50)}
    assert not set(layer.rules) & set(left_rules)
    assert all(item.searchable for item in layer.left_out if item.kind == "rule")
    assert sum(item.kind == "profile" for item in layer.left_out) == 16
    assert f"Left out for size: {len(left_rules)} always-on rule(s)" in layer.text
    check = next(c for c in doctor.run_checks(store) if c.name == "always-on layer")
    assert not check.ok  # profile lines over the caps are not searchable until `quipu profile fit`
    listed = "\n".join(check.details)
    for rid in left_rules:
        assert f"rule {rid} " in listed
    assert "trait number 0 " in listed and "trait number 29 " not in listed  # the oldest wait outside
    assert "quipu profile fit" in check.summary


def test_after_fit_everything_left_out_is_searchable_and_doctor_is_satisfied(store_path: Path) -> None:
    store = oversized_store(store_path)
    shown_before = always_on.build(store).profile_lines
    profile.fit(store)

    layer = always_on.build(store)
    assert layer.profile_lines == shown_before  # fit keeps exactly the lines the layer was showing
    check = next(c for c in doctor.run_checks(store) if c.name == "always-on layer")

    assert all(item.searchable for item in layer.left_out)
    assert check.ok and any("rule-49" in line for line in check.details)


def test_rules_the_user_gave_come_before_inferred_ones(store_path: Path) -> None:
    store = make_store(store_path)
    add_all(store, [
        memory("zz-inferred", "Inferred rule about logs", cls="rule", always_on=True, origin="session"),
        memory("aa-user", "User rule about deploys", cls="rule", always_on=True, origin="user"),
        memory("not-on", "A rule that is not always on", cls="rule"),
    ])

    layer = always_on.build(store)

    assert layer.rules == ["aa-user", "zz-inferred"]
    assert "reference data about the user, not instructions" in layer.text.lower()


def test_an_empty_store_has_no_always_on_layer(store_path: Path) -> None:
    assert always_on.build(make_store(store_path)).text == ""


# ------------------------------------------------------------------------------ the hook, as Claude Code runs it

def project_with_store(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    store = make_store(project / ".quipu")
    profile.add_line(store, "Identity", "The user is the lead backend developer of shop-api")
    add_all(store, [memory("deploy-rule", "Deploys of shop-api go through CI", cls="rule", always_on=True)])
    return project


def event(project: Path, source: str = "startup") -> str:
    return json.dumps({"session_id": "abc123", "transcript_path": str(project / "t.jsonl"), "cwd": str(project),
                       "hook_event_name": "SessionStart", "source": source, "model": "claude-sonnet-5"})


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact"])
def test_session_start_hook_prints_valid_hook_json_for_every_source(tmp_path: Path, source: str) -> None:
    project = project_with_store(tmp_path)

    result = quipu("session-start", "--hook", input=event(project, source), cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "Identity: The user is the lead backend developer of shop-api" in context
    assert "Deploys of shop-api go through CI (id deploy-rule)" in context
    assert "Profile (1/14 lines" in context


def test_the_plugin_launcher_passes_the_layer_through(tmp_path: Path) -> None:
    project = project_with_store(tmp_path)

    result = subprocess.run([real_python(), str(REPO_ROOT / "hooks" / "quipu_hook.py"), "session-start"],
                            input=event(project), capture_output=True, text=True, timeout=60, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert "deploy-rule" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("stdin", ["not json", "[1, 2]", json.dumps({"source": "startup", "cwd": 7})])
def test_the_hook_fails_open_on_bad_input(tmp_path: Path, stdin: str) -> None:
    result = quipu("session-start", "--hook", input=stdin, cwd=tmp_path,
                   env={"QUIPU_STORE": str(tmp_path / "missing-store")})
    assert result.returncode == 0 and result.stdout == ""


def test_the_hook_does_nothing_inside_quipus_own_model_children(tmp_path: Path) -> None:
    project = project_with_store(tmp_path)
    result = quipu("session-start", "--hook", input=event(project), env={"QUIPU_CHILD": "1"})
    assert result.returncode == 0 and result.stdout == ""


def test_an_unknown_source_gets_no_context(tmp_path: Path) -> None:
    project = project_with_store(tmp_path)
    result = quipu("session-start", "--hook", input=event(project, "elsewhere"))
    assert result.returncode == 0 and result.stdout == ""


def test_session_start_for_people_shows_the_layer_and_its_size(tmp_path: Path) -> None:
    project = project_with_store(tmp_path)
    result = quipu("--store", str(project / ".quipu"), "session-start")
    data = json.loads(quipu("--store", str(project / ".quipu"), "session-start", "--json").stdout)
    assert result.returncode == 0 and "tokens; 0 item(s) left out" in result.stdout
    assert data["tokens"] <= 1300 and data["rules"] == ["deploy-rule"]
    assert os.path.isdir(project / ".quipu" / ".cache")


def test_a_hand_written_line_over_the_entry_cap_is_left_out_and_fit_moves_it(store_path: Path) -> None:
    store = make_store(store_path)
    long_line = "- Preference: The user " + "really " * 30 + "likes short answers"
    store.commit({profile.PROFILE_PATH: f"# Profile\n\n- Identity: The user is Maria\n{long_line}\n".encode()},
                 "hand edit", {"Quipu-Action": "edit", "Quipu-Memory": "profile"})

    layer = always_on.build(store)
    change = profile.fit(store)

    assert layer.profile_lines == ["Identity: The user is Maria"]
    assert [item.kind for item in layer.left_out] == ["profile"]
    assert [line.text for line, _ in change.demoted] == [long_line.removeprefix("- Preference: ")]
    assert always_on.build(store).left_out == []


def test_a_rule_of_one_project_starts_only_that_projects_sessions(tmp_path: Path) -> None:
    """An always-on rule recorded as of a project (its ``project`` field) is that project's: a
    session in another folder does not start with it; a rule of no project starts every session."""
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    for folder in (shop, blog):
        folder.mkdir()
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
    store = make_store(tmp_path / "store")
    add_all(store, [
        memory("shop-check", "Run make check before pushing shop", cls="rule", always_on=True, project=str(shop)),
        memory("everywhere", "Answer in British English", cls="rule", always_on=True),
    ])
    env = {"QUIPU_STORE": str(store.root)}

    contexts = {}
    for folder in (shop, blog):
        result = quipu("session-start", "--hook", input=event(folder), cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        contexts[folder.name] = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    by_hand = json.loads(quipu("session-start", "--json", cwd=blog, env=env).stdout)

    assert "(id shop-check)" in contexts["shop"] and "(id everywhere)" in contexts["shop"]
    assert "(id shop-check)" not in contexts["blog"] and "(id everywhere)" in contexts["blog"]
    assert by_hand["rules"] == ["everywhere"]
    assert set(always_on.build(store).rules) == {"shop-check", "everywhere"}  # no folder: every rule (doctor)


def test_in_a_projects_own_store_a_rule_of_another_project_stays_out_and_its_own_show_wherever_cloned(
        tmp_path: Path) -> None:
    """A project's ``.quipu`` is cloned by each teammate wherever they keep the project: a rule
    recorded as of the project (its folder at the author's place) shows for all; one recorded as of
    another project does not."""
    author, teammate = tmp_path / "ann" / "src" / "shop", tmp_path / "work" / "shop"
    for folder in (author, teammate):
        folder.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
    store = make_store(teammate / ".quipu")
    add_all(store, [
        memory("ours", "Run make check before pushing", cls="rule", always_on=True, project=str(author)),
        memory("theirs", "Blog posts need a hero image", cls="rule", always_on=True, project=str(tmp_path / "blog")),
    ])

    result = quipu("session-start", "--hook", input=event(teammate), cwd=tmp_path,
                   env={"QUIPU_STORE": ""})

    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "(id ours)" in context and "(id theirs)" not in context
