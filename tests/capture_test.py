"""Capture at session end: the scripted model proposes, the gates decide, nothing secret reaches git."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from quipu.capture import capture
from quipu.capture import facts
from quipu.index import index
from quipu.prompt import transcript
from quipu.store.memory import Memory
from quipu.model import Budget, ScriptedModel
from quipu.store.store import Store
from quipu.curate.sweep import SessionEvent, per_session_work
from testing.fixtures import git, make_store, quipu

FIXTURES = Path(__file__).parent / "fixtures" / "capture"
SESSION = FIXTURES / "session.jsonl"
SESSION_ID = "7f3c2a10-5b7e-4c21-9d0a-3e4f5a6b7c8d"
KEY = "sk-ant-api03-Q7vK2mXr9LpT4wZs8NbY3cHd6FjG1uAe5RqP0oIiMn"


def candidates() -> dict:
    return json.loads((FIXTURES / "candidates.json").read_text(encoding="utf-8"))


def memories(store: Store) -> list[Memory]:
    from quipu.store.memory import parse_memory

    return [parse_memory(data, rel) for rel, data in store.iter_memory_files()]


def every_byte_of_history(store: Store) -> bytes:
    """Every object of every commit (blobs, trees, messages), plus `git log -p --all`."""
    objects = subprocess.run(["git", "-C", str(store.root), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    log = subprocess.run(["git", "-C", str(store.root), "log", "-p", "--all", "--format=%B"],
                         capture_output=True, check=True).stdout
    return objects + log


def test_session_with_preference_rule_transient_error_refuted_hypothesis_and_key_captures_only_preference_and_rule(
    store_path: Path,
) -> None:
    store = make_store(store_path)
    model = ScriptedModel([candidates()])

    report = capture.capture_session(store, SESSION, SESSION_ID, model, Budget(max_calls=1))

    assert report.error is None
    captured = {m.title: m for m in memories(store)}
    assert set(captured) == {"The user prefers pnpm over npm", "shop-api migrations go through Alembic"}
    assert sorted(gate for gate, _ in report.refused) == ["outcome", "secret", "transient-error"]
    # both carry the session id, in the file and in the commit trailer
    assert {m.session for m in captured.values()} == {SESSION_ID}
    captures = store.log(action="capture")
    assert len(captures) == 2 and {e.trailers["Quipu-Session"] for e in captures} == {SESSION_ID}
    assert {m.cls for m in captured.values()} == {"preference", "rule"}
    # the key is nowhere: not in any object of the repository, not in its log, not in the cache
    assert KEY.encode() not in every_byte_of_history(store)
    files = [p for p in store.root.rglob("*") if p.is_file() and ".git" not in p.relative_to(store.root).parts]
    assert capture.log_path(store) in files
    for path in files:  # the working tree and the cache (capture.log, model-calls.jsonl, the index)
        assert KEY.encode() not in path.read_bytes(), path
    log = [json.loads(line) for line in capture.log_path(store).read_text(encoding="utf-8").splitlines()]
    refused = [entry for entry in log if entry["decision"] == "refused"]
    assert {entry["gate"] for entry in refused} == {"outcome", "secret", "transient-error"}
    assert all(entry["excerpt"] for entry in refused)


def test_the_model_reads_the_whole_session_without_machine_turns_and_with_the_key_redacted(store_path: Path) -> None:
    store = make_store(store_path)
    model = ScriptedModel([{"candidates": []}])

    capture.capture_session(store, SESSION, SESSION_ID, model)

    prompt, schema, purpose = model.calls[0]
    assert purpose == "capture" and schema == capture.CANDIDATE_SCHEMA
    assert KEY not in prompt and "[REDACTED:provider-token]" in prompt
    assert "I prefer pnpm over npm" in prompt  # the start
    assert "the TZ hypothesis was wrong" in prompt  # the refutation at the end
    assert "<task-notification>" not in prompt and "Caveat: The messages below" not in prompt
    assert "ERR_PNPM_FETCH_503" not in prompt  # tool results are not the conversation
    assert "the user wants pnpm" not in prompt  # nor is thinking


def test_a_session_too_long_for_the_budget_keeps_its_start_and_its_end() -> None:
    turns = [("user", f"turn {n:03d} " + "words " * 200) for n in range(200)]

    text = capture.session_text(turns, max_chars=12_000)

    assert len(text) <= 12_200
    assert "turn 000" in text and "turn 199" in text
    assert "turn 100" not in text
    assert "turn(s) from the middle of the session left out" in text
    head, tail = text.split("left out for length")
    assert len(tail) > len(head)  # the end gets more room: what held at the end matters most


def test_capturing_the_same_session_again_duplicates_nothing(store_path: Path) -> None:
    store = make_store(store_path)
    model = ScriptedModel([candidates(), candidates()])

    first = capture.capture_session(store, SESSION, SESSION_ID, model)
    second = capture.capture_session(store, SESSION, SESSION_ID, model)

    assert len(first.captured) == 2 and second.captured == []
    assert sorted(second.skipped) == ["The user prefers pnpm over npm", "shop-api migrations go through Alembic"]
    assert "Already captured from this session" in model.calls[1][0]
    assert len(memories(store)) == 2


def test_a_model_that_answers_garbage_commits_nothing_and_says_why(store_path: Path) -> None:
    store = make_store(store_path)
    head = store.head()

    report = capture.capture_session(store, SESSION, SESSION_ID, ScriptedModel(["I think you should remember pnpm"]))

    assert report.error is not None and "not JSON" in report.error
    assert store.head() == head


def test_a_budget_of_no_calls_is_refused_before_the_model_is_asked(store_path: Path) -> None:
    store = make_store(store_path)
    model = ScriptedModel([candidates()])

    report = capture.capture_session(store, SESSION, SESSION_ID, model, Budget(max_calls=0))

    assert report.error is not None and "budget" in report.error
    assert model.calls == [] and memories(store) == []


def test_aliases_that_copy_the_memorys_own_words_are_dropped(store_path: Path) -> None:
    store = make_store(store_path)
    capture.capture_session(store, SESSION, SESSION_ID, ScriptedModel([candidates()]))

    pnpm = next(m for m in memories(store) if m.cls == "preference")
    assert "pnpm over npm" not in pnpm.aliases
    assert "which package manager do we use" in pnpm.aliases
    db = index.open_fresh(store)
    try:
        from quipu.prompt import recall

        hits = recall.recall(db, "which package manager should I install dependencies with?").hits
    finally:
        db.close()
    assert [h.id for h in hits][:1] == [pnpm.id]


def test_origin_is_user_only_when_the_quote_is_really_in_a_human_turn(store_path: Path) -> None:
    store = make_store(store_path)
    answer = candidates()
    answer["candidates"][1]["quote"] = "the user never said these words"

    capture.capture_session(store, SESSION, SESSION_ID, ScriptedModel([answer]))

    origins = {m.cls: m.origin for m in memories(store)}
    assert origins == {"preference": "user", "rule": "session"}


def test_a_captured_fact_updates_its_subjects_fact_note(store_path: Path) -> None:
    store = make_store(store_path)
    facts.set_fact(store, "shop-api Python version", "3.11", since="2025-01-10")
    answer = {"candidates": [{
        "class": "fact", "title": "shop-api runs on Python 3.12", "statement": "shop-api runs on Python 3.12.",
        "outcome": "held", "kind": "durable", "said_by": "assistant", "quote": "", "topics": ["python"],
        "entities": ["shop-api"], "aliases": [], "subject": "shop-api Python version", "value": "3.12",
        "scope": "project", "profile_prefix": "", "stable_for_months": 0}]}

    report = capture.capture_session(store, SESSION, SESSION_ID, ScriptedModel([answer]))

    assert report.facts == [facts.fact_id("shop-api Python version")]
    memory, history = facts.get_fact(store, "shop-api Python version")
    assert [v.value for v in history] == ["3.11", "3.12"]
    assert memory.title == "shop-api Python version: 3.12" and memory.session == SESSION_ID


def test_a_durable_fact_about_the_user_also_goes_on_the_profile_card(store_path: Path) -> None:
    from quipu.capture import profile

    store = make_store(store_path)
    answer = candidates()
    answer["candidates"][0].update(scope="user", profile_prefix="Preference", stable_for_months=24)

    report = capture.capture_session(store, SESSION, SESSION_ID, ScriptedModel([answer]))

    card = profile.read_card(store)
    assert [ln.entry for ln in card.lines] == [
        "Preference: The user prefers pnpm over npm for all JavaScript package work in this repository."]
    assert card.lines[0].origin == "user" and report.profile == [card.lines[0].entry]


def test_conversation_reads_only_human_prompts_and_assistant_text() -> None:
    roles = [role for role, _ in transcript.conversation(str(SESSION))]
    assert roles.count("user") == 4 and roles.count("assistant") == 6


def test_capture_command_runs_a_command_model_and_prints_the_report(store_path: Path, tmp_path: Path) -> None:
    make_store(store_path)
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(candidates()), encoding="utf-8")
    script = tmp_path / "model.py"
    script.write_text(
        "import json, sys\nrequest = json.load(sys.stdin)\nassert request['purpose'] == 'capture'\n"
        f"print(open({str(answer)!r}).read())\n", encoding="utf-8")

    result = quipu("--store", str(store_path), "capture", "--transcript", str(SESSION), "--session", SESSION_ID,
                   "--model", f"command:{sys.executable} {script}", "--json")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report["captured"]) == 2
    assert report["refused_by_gate"] == {"transient-error": 1, "outcome": 1, "secret": 1}
    assert KEY not in result.stdout
    assert "quipu: capture" in git(store_path, "log", "--format=%s")


def test_capture_command_with_a_missing_transcript_says_how_to_fix_it(store_path: Path) -> None:
    make_store(store_path)
    result = quipu("--store", str(store_path), "capture", "--transcript", "/nonexistent.jsonl", "--session", "s1")
    assert result.returncode == 1 and "no transcript at" in result.stderr and "- pass" in result.stderr


def test_session_end_work_captures_the_session_before_its_small_sweep(store_path: Path) -> None:
    store = make_store(store_path)
    model = ScriptedModel([candidates()])  # the sweep's own calls find the script empty and stop
    event = SessionEvent("SessionEnd", SESSION_ID, str(SESSION), str(store_path), "other")

    report = per_session_work(store, event, model=model, lock_wait=0.0)

    assert model.calls[0][2] == "capture"
    titles = {m.title for m in memories(store)}
    assert titles == {"The user prefers pnpm over npm", "shop-api migrations go through Alembic"}
    assert report.memories == 2


@pytest.mark.parametrize("bad", ["", "no json at all\n", json.dumps({"type": "user"}) + "\n"])
def test_a_transcript_without_a_human_prompt_asks_no_model(store_path: Path, tmp_path: Path, bad: str) -> None:
    store = make_store(store_path)
    path = tmp_path / "t.jsonl"
    path.write_text(bad, encoding="utf-8")
    model = ScriptedModel()

    report = capture.capture_session(store, path, "s-empty", model)

    assert model.calls == [] and report.error is None and report.captured == []


def test_enrichment_keeps_paraphrases_and_drops_copies_of_the_notes_own_words() -> None:
    from quipu.capture import enrich
    from testing.fixtures import memory

    note = memory("deploy-accident", "Production deploy accident",
                  "scripts/deploy.sh ran against prod with the wrong profile.", aliases=["broke prod"])
    model = ScriptedModel([{"aliases": ["am I about to nuke production", "production deploy accident",
                                        "Deploy accident in production", "broke prod", "prod went down"]}])

    enriched = enrich.enrich(model, note)

    assert enriched.aliases == ("broke prod", "am I about to nuke production", "prod went down")
    assert model.calls[0][2] == "enrich" and "Production deploy accident" in model.calls[0][0]


def test_a_candidate_near_identical_to_a_memory_of_another_session_is_not_written(store_path: Path) -> None:
    store = make_store(store_path)
    said = "The user prefers pnpm over npm for all JavaScript package work in this repository"
    store.add(Memory.create({"id": "pnpm-pref", "title": "The user prefers pnpm over npm.", "class": "preference", "origin": "user",
                             "created": "2026-01-05T10:00:00Z"}, said + "\n"))

    report = capture.capture_session(store, SESSION, SESSION_ID, ScriptedModel([candidates()]))

    assert "The user prefers pnpm over npm" in report.skipped
    assert report.duplicate_of == {"The user prefers pnpm over npm": "pnpm-pref"}  # the reason a person reads
    assert [m.title for m in memories(store)].count("The user prefers pnpm over npm") == 0
    assert "shop-api migrations go through Alembic" in [m.title for m in memories(store)]
    log = capture.log_path(store).read_text(encoding="utf-8")
    assert '"decision": "duplicate"' in log and '"of": "pnpm-pref"' in log


def test_a_candidate_near_identical_to_a_retracted_memory_is_not_written_back(store_path: Path) -> None:
    store = make_store(store_path)
    said = "The user prefers pnpm over npm for all JavaScript package work in this repository"
    store.add(Memory.create({"id": "pnpm-pref", "title": "The user prefers pnpm over npm.", "class": "preference",
                             "origin": "user", "created": "2026-01-05T10:00:00Z"}, said + "\n"))
    store.retract("pnpm-pref", reason="we moved to bun")

    report = capture.capture_session(store, SESSION, SESSION_ID, ScriptedModel([candidates()]))

    assert report.duplicate_of == {"The user prefers pnpm over npm": "pnpm-pref"}
    assert [m.title for m in memories(store)].count("The user prefers pnpm over npm") == 0
    log = capture.log_path(store).read_text(encoding="utf-8")
    assert '"of": "pnpm-pref"' in log and '"retracted": true' in log


def test_a_project_memory_is_of_the_work_tree_its_session_ran_in(store_path: Path, tmp_path: Path) -> None:
    """A session that ran in a subfolder of a linked worktree captures a project memory of the main
    checkout: the prompt hook ties it to every folder of that project."""
    repo = tmp_path / "shop"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start")
    git(repo, "worktree", "add", "-q", str(tmp_path / "shop-feature"))
    (tmp_path / "shop-feature" / "api").mkdir()
    session = tmp_path / "session.jsonl"
    session.write_text(SESSION.read_text(encoding="utf-8").replace('"/home/dev/shop"', json.dumps(
        str(tmp_path / "shop-feature" / "api"))), encoding="utf-8")
    store = make_store(store_path)
    answer = candidates()
    for item in answer["candidates"]:
        item["scope"] = "project"

    capture.capture_session(store, session, SESSION_ID, ScriptedModel([answer]))

    assert {m.project for m in memories(store)} == {str(repo)}


def test_a_project_memory_in_the_projects_own_store_records_no_folder(tmp_path: Path) -> None:
    """Every memory of a project's own store is of that project on every machine; a store a team
    shares keeps no one's home path."""
    repo = tmp_path / "shop"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    store = make_store(repo / ".quipu")
    session = tmp_path / "session.jsonl"
    session.write_text(SESSION.read_text(encoding="utf-8").replace('"/home/dev/shop"', json.dumps(str(repo / "src"))),
                       encoding="utf-8")
    answer = candidates()
    for item in answer["candidates"]:
        item["scope"] = "project"

    capture.capture_session(store, session, SESSION_ID, ScriptedModel([answer]))

    assert memories(store) and {m.project for m in memories(store)} == {None}


def test_inside_a_project_a_claim_the_per_user_store_holds_is_not_captured_again(
        tmp_path: Path, quipu_env: Path) -> None:
    """The hook recalls a project's store and the per-user store together there: capture into the
    project's store skips what the per-user store already says."""
    import os

    user = make_store(Path(os.environ["QUIPU_HOME"]) / "store")
    said = "The user prefers pnpm over npm for all JavaScript package work in this repository"
    user.add(Memory.create({"id": "pnpm-pref", "title": "The user prefers pnpm over npm.", "class": "preference",
                            "origin": "user", "created": "2026-01-05T10:00:00Z"}, said + "\n"))
    project = tmp_path / "shop"
    make_store(project / ".quipu")
    inner = Store.find(cwd=str(project))  # found by walking up, as a session in the project finds it
    assert inner.root == project / ".quipu"

    report = capture.capture_session(inner, SESSION, SESSION_ID, ScriptedModel([candidates()]))

    assert "The user prefers pnpm over npm" in report.skipped
    assert "shop-api migrations go through Alembic" in [m.title for m in memories(inner)]
    assert '"of": "pnpm-pref"' in capture.log_path(inner).read_text(encoding="utf-8")
