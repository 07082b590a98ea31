"""The real Claude Code CLI runs quipu's hooks and offline pass, offline, against a loopback fake of the API.

Each test runs the client from the npm registry (``testing.claude_code``) as a throw-away user whose
``ANTHROPIC_BASE_URL`` is a ``FakeMessagesAPI`` on 127.0.0.1, and asserts on the requests the client
sent: what quipu's hooks put in front of the model, and what quipu's own ``claude -p`` child asked.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quipu.claude import always_on
from quipu.capture import profile
from quipu.model import ClaudeModel, InvalidAnswer, ModelUnavailable, ScriptedModel
from quipu.store.store import Store
from testing import claude_code
from testing.claude_code import OAUTH_TOKEN, Sandbox
from testing.fake_messages_api import FakeMessagesAPI, NotLoopback, Recorded
from testing.fixtures import REPO_ROOT, add_all, example_store, git, make_store, memory

TOPICAL = "How do we deploy shop-api to production?"
CONVERSATIONAL = "thanks, that is all for now"
MACHINE_TURN = json.loads((Path(__file__).parent / "fixtures" / "claude" / "machine_prompts.json").read_text())[0]
MEMORY_BLOCK = "<quipu-memory"
ALWAYS_ON_BLOCK = "<quipu-always-on"
OUTER_KEY = "sk-ant-api03-metered-key-of-the-outer-session"
CAPTURE_PROMPT = ("From now on remember this for shop-api: database migrations go through Alembic revision "
                  "files, never hand-written SQL.")
CAPTURED_TITLE = "shop-api migrations go through Alembic"
OLD_RULE = "sql-migrations"
HOOK_WAIT = 150.0  # seconds the detached pass may take on a busy machine before a test gives up


@pytest.fixture(scope="session")
def claude_exe() -> Path:
    """The real client, installed once per run (with the machine's own npm configuration)."""
    try:
        return claude_code.install()
    except claude_code.NpmMissing as exc:
        pytest.skip(str(exc))


def _curator_answer(prompt: str) -> dict[str, Any]:
    ids = re.findall(r'<memory id="([^"]+)">', prompt)
    older, newer = (ids + ["", ""])[:2]
    if older == OLD_RULE:
        claims = ["shop-api migrations are hand-written SQL files"]
        return {"verdict": "supersedes", "winner": newer, "loser": older, "confidence": 0.9,
                "covered_claims": claims, "loser_claims": claims, "full_scope": True,
                "reason": "the newer rule replaces the older one"}
    return {"verdict": "unrelated", "winner": older, "loser": newer, "confidence": 0.9, "covered_claims": [],
            "loser_claims": [], "full_scope": False, "reason": "different subjects"}


def _capture_answer(prompt: str) -> dict[str, Any]:
    if "Alembic" not in prompt:
        return {"candidates": []}
    return {"candidates": [{
        "class": "rule", "title": CAPTURED_TITLE,
        "statement": "Database migrations of shop-api are written as Alembic revision files, not as hand-written SQL.",
        "outcome": "held", "kind": "durable", "said_by": "user",
        "quote": "database migrations go through Alembic revision files, never hand-written SQL",
        "topics": ["database", "migrations"], "entities": ["shop-api", "alembic"],
        "aliases": ["change the schema"], "subject": "", "value": "", "scope": "project",
        "profile_prefix": "", "stable_for_months": 0,
    }]}


def offline_model(prompt: str, schema: dict[str, Any], purpose: str) -> dict[str, Any]:
    """The scripted model behind the fake API: capture and curator answers, by the schema asked for."""
    required = set(schema.get("required", ()))
    if "candidates" in required:
        return _capture_answer(prompt)
    if "verdict" in required:
        return _curator_answer(prompt)
    raise InvalidAnswer(f"the scripted model has no answer for a {purpose} call with keys {sorted(required)}")


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI(ScriptedModel(responder=offline_model)) as server:
        yield server
    # Every connection the client opened arrived here; none was for another host.
    assert server.elsewhere() == [], [f"{r.method} {r.path}" for r in server.elsewhere()]
    assert server.errors == []


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return example_store(tmp_path / "store")


@pytest.fixture
def sandbox(claude_exe: Path, api: FakeMessagesAPI, tmp_path: Path, store: Store) -> Sandbox:
    return Sandbox.create(claude_exe, tmp_path / "user", api, extra={"QUIPU_STORE": str(store.root)})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def quipu_in(sandbox: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "quipu", *args], capture_output=True, text=True,
                            env=dict(sandbox.env))
    assert result.returncode == 0, result.stderr
    return result


def ask(sandbox: Sandbox, prompt: str, cwd: Path, **kwargs: Any) -> list[Recorded]:
    """Run ``claude -p PROMPT``; the message requests of this run's main conversation (they carry the prompt)."""
    before = len(sandbox.api.messages())
    result = sandbox.prompt(prompt, cwd=cwd, **kwargs)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "Noted."
    new = sandbox.api.messages()[before:]
    main = [r for r in new if any(prompt in text for text in r.user_texts())]
    assert main, f"no request carried the prompt; {len(new)} requests"
    return main


def injected(request: Recorded) -> list[str]:
    """The quipu memory blocks the request put before the model."""
    return [t for t in request.user_texts() if MEMORY_BLOCK in t]


def wait_for(predicate: Any, what: str, timeout: float = HOOK_WAIT) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.5)


# --- the fake itself ---------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.com", ""])
def test_the_fake_api_refuses_any_address_but_loopback(host: str) -> None:
    with pytest.raises(NotLoopback):
        FakeMessagesAPI(ScriptedModel(), host=host)


def test_the_fake_api_listens_on_loopback_only_and_answers_structured_output_from_the_scripted_model() -> None:
    import http.client

    with FakeMessagesAPI(ScriptedModel([{"echo": "hi"}])) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "say hi"}],
                "tools": [{"name": "StructuredOutput", "input_schema": {
                    "type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"]}}]}
        conn.request("POST", "/v1/messages", json.dumps(body), {"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())
        conn.request("POST", "/v1/messages/count_tokens", json.dumps({"messages": body["messages"]}),
                     {"Content-Type": "application/json"})
        counted = json.loads(conn.getresponse().read())
    assert isinstance(counted["input_tokens"], int) and counted["input_tokens"] > 0
    assert answer["stop_reason"] == "tool_use"
    assert answer["content"] == [{"type": "tool_use", "id": answer["content"][0]["id"],
                                  "name": "StructuredOutput", "input": {"echo": "hi"}}]
    assert [r.body for r in server.requests] == [body, {"messages": body["messages"]}]
    assert [r.is_message for r in server.requests] == [True, False]


def test_a_connection_the_client_opens_to_another_host_arrives_at_the_fake_and_is_refused(
    sandbox: Sandbox, project: Path,
) -> None:
    # Left to itself, a logged-in client also calls its OAuth host; the sandbox points that at the fake
    # too. Without that, the call is caught by the proxy variables instead of leaving the machine.
    env = {key: value for key, value in sandbox.env.items() if key != "CLAUDE_CODE_CUSTOM_OAUTH_URL"}
    result = subprocess.run([str(sandbox.exe), "-p", CONVERSATIONAL], cwd=project, env=env, capture_output=True,
                            text=True, timeout=claude_code.RUN_TIMEOUT)

    assert result.returncode == 0, result.stdout + result.stderr
    tunnels = [r.path for r in sandbox.api.elsewhere()]
    assert tunnels and all(r.method == "CONNECT" for r in sandbox.api.elsewhere()), tunnels
    assert "api.anthropic.com:443" in tunnels
    sandbox.api.forget()  # seen and refused: the fixture's own check is for the other tests


# --- recall on every prompt --------------------------------------------------------------------

def test_plugin_manifest_validates(sandbox: Sandbox, project: Path) -> None:
    result = sandbox.run(["plugin", "validate", str(REPO_ROOT)], cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr


def test_project_install_recalls_the_right_memory_and_only_for_a_human_topical_prompt(
    sandbox: Sandbox, project: Path,
) -> None:
    quipu_in(sandbox, "install", "claude", "--project", "--project-dir", str(project))

    (topical,) = ask(sandbox, TOPICAL, project)
    (block,) = injected(topical)
    assert "UserPromptSubmit hook additional context" in block
    assert "(id deploy-procedure," in block and "How we deploy shop-api" in block

    for prompt in (CONVERSATIONAL, MACHINE_TURN):
        (request,) = ask(sandbox, prompt, project)
        assert injected(request) == [], prompt
    # Only the topical prompt's request carried a quipu block.
    assert sandbox.api.all_text().count(MEMORY_BLOCK) == 1


def test_a_memory_injected_once_is_not_repeated_later_in_the_same_session(sandbox: Sandbox, project: Path) -> None:
    quipu_in(sandbox, "install", "claude", "--project", "--project-dir", str(project))
    session = str(uuid.uuid4())

    (first,) = ask(sandbox, TOPICAL, project, session_id=session)
    (second,) = ask(sandbox, "And how do we deploy shop-api to staging?", project, resume=session)

    assert "(id deploy-procedure," in injected(first)[0]
    # The resumed request replays the first turn's block; the second prompt adds none with that memory.
    blocks = injected(second)
    assert [b for b in blocks if "(id deploy-procedure," in b] == injected(first)


def test_user_install_recalls_and_uninstall_gives_back_the_users_own_hook(
    sandbox: Sandbox, project: Path, tmp_path: Path,
) -> None:
    own_hook = {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "echo 'own-hook: the user keeps a prompt log'"}]}]}}
    settings = sandbox.config_dir / "settings.json"
    settings.write_text(json.dumps(own_hook), encoding="utf-8")
    quipu_in(sandbox, "install", "claude", "--user")

    (with_quipu,) = ask(sandbox, TOPICAL, project)
    assert "(id deploy-procedure," in injected(with_quipu)[0]
    assert "own-hook: the user keeps a prompt log" in with_quipu.text()

    quipu_in(sandbox, "uninstall", "claude", "--user")
    assert json.loads(settings.read_text(encoding="utf-8")) == own_hook
    (without,) = ask(sandbox, TOPICAL, project)
    assert injected(without) == []
    assert "own-hook: the user keeps a prompt log" in without.text()


def test_the_plugin_runs_the_same_recall(sandbox: Sandbox, project: Path) -> None:
    (request,) = ask(sandbox, TOPICAL, project, args=["--plugin-dir", str(REPO_ROOT)])
    (block,) = injected(request)
    assert "(id deploy-procedure," in block


def test_quipu_hooks_stay_silent_inside_a_quipu_model_child(sandbox: Sandbox, project: Path) -> None:
    quipu_in(sandbox, "install", "claude", "--project", "--project-dir", str(project))
    (request,) = ask(sandbox, TOPICAL, project, env={"QUIPU_CHILD": "1"})
    assert MEMORY_BLOCK not in request.text() and ALWAYS_ON_BLOCK not in request.text()


def test_a_session_started_with_the_switches_off_neither_reads_nor_feeds_memory(
    sandbox: Sandbox, project: Path, store: Store,
) -> None:
    """`QUIPU_RECALL=off claude` injects nothing of the store, `QUIPU_CAPTURE=off` captures nothing of
    the session: one session opts out without touching a setting, through the environment the real
    client hands its hooks."""
    add_all(store, [memory("review-rule", "Every shop-api release needs a second reviewer",
                           "Releases are tagged only after a second reviewer approves.", cls="rule",
                           always_on=True)])
    quipu_in(sandbox, "install", "claude", "--project", "--project-dir", str(project))

    (off,) = ask(sandbox, TOPICAL, project, env={"QUIPU_RECALL": "off"})
    assert MEMORY_BLOCK not in off.text() and ALWAYS_ON_BLOCK not in off.text()
    (on,) = ask(sandbox, TOPICAL, project)  # the same session start and prompt, the switch unset
    assert "(id deploy-procedure," in injected(on)[0] and ALWAYS_ON_BLOCK in on.text()

    session = str(uuid.uuid4())
    ask(sandbox, CAPTURE_PROMPT, project, session_id=session, env={"QUIPU_CAPTURE": "off"})
    wait_for(lambda: f"nothing of session {session} is captured" in _hook_log(sandbox), "the SessionEnd hook")
    assert not [line for line in _hook_log(sandbox).splitlines() if "per-session work" in line and session in line]
    assert store.log(action="capture") == []


# --- the always-on layer at session start ------------------------------------------------------

def test_session_start_puts_the_profile_and_always_on_rules_in_the_first_request_within_budget(
    sandbox: Sandbox, project: Path, store: Store,
) -> None:
    store.commit({profile.PROFILE_PATH: b"# Profile\n\n- Environment: the shop-api web shop backend runs on Debian 12\n"},
                 "hand edit", {"Quipu-Action": "edit", "Quipu-Memory": "profile"})
    add_all(store, [memory("review-rule", "Every shop-api release needs a second reviewer",
                           "Releases are tagged only after a second reviewer approves.", cls="rule",
                           always_on=True)])
    quipu_in(sandbox, "install", "claude", "--project", "--project-dir", str(project))

    (first,) = ask(sandbox, CONVERSATIONAL, project)

    layers = [t for t in first.user_texts() if ALWAYS_ON_BLOCK in t]
    assert len(layers) == 1, first.user_texts()
    layer = layers[0]
    assert "SessionStart hook additional context" in layer
    assert "the shop-api web shop backend runs on Debian 12" in layer and "Every shop-api release needs a second reviewer" in layer
    body = layer[layer.index(ALWAYS_ON_BLOCK):layer.index("</quipu-always-on>") + len("</quipu-always-on>")]
    assert len(body) <= always_on.BUDGET_TOKENS * always_on.CHARS_PER_TOKEN


# --- the offline pass through the real `claude -p` child ---------------------------------------

def _offline_pass_store(path: Path) -> Store:
    store = make_store(path)
    add_all(store, [memory(OLD_RULE, "shop-api migrations are hand-written SQL",
                           "shop-api migrations are hand-written SQL files run with psql.", cls="rule",
                           topics=["database", "migrations"], entities=["shop-api", "alembic"],
                           created="2025-01-10T09:00:00Z")])
    return store


def _hook_log(sandbox: Sandbox) -> str:
    path = Path(sandbox.env["QUIPU_HOME"]) / "logs" / "session-hook.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def _assert_the_child_used_the_subscription_only(api: FakeMessagesAPI) -> list[Recorded]:
    calls = api.structured_calls()
    assert calls, "quipu's child never reached the fake API"
    for call in calls:
        assert call.headers.get("authorization") == f"Bearer {OAUTH_TOKEN}"
        assert "x-api-key" not in call.headers
        assert MEMORY_BLOCK not in call.text() and ALWAYS_ON_BLOCK not in call.text()  # the recursion guard
    return calls


def _typed_turns(sandbox: Sandbox, project: Path, session: str) -> Path:
    """The transcript of two earlier interactive turns of ``session``, as the client's TUI writes them.

    ``claude -p`` marks its own prompt ``promptSource: "sdk"``, which quipu never captures from (a
    program, not a person, may have written it); only the interactive TUI writes ``"typed"``. So the
    session starts with typed turns, and the real client resumes it with ``-p``."""
    folder = sandbox.config_dir / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project.resolve()))
    folder.mkdir(parents=True, exist_ok=True)
    common = {"isSidechain": False, "userType": "external", "entrypoint": "cli", "cwd": str(project.resolve()),
              "sessionId": session, "version": claude_code.version(), "gitBranch": "main"}
    rows: list[dict[str, Any]] = []
    parent = None
    for n, (prompt, reply) in enumerate([(CAPTURE_PROMPT, "Noted: Alembic revision files for every migration."),
                                         ("Which folder holds them?", "They live in shop-api/migrations.")]):
        user_id, reply_id = str(uuid.uuid4()), str(uuid.uuid4())
        rows.append({**common, "parentUuid": parent, "promptId": str(uuid.uuid4()), "type": "user", "uuid": user_id,
                     "timestamp": f"2026-12-01T09:0{n}:00.000Z", "permissionMode": "default",
                     "promptSource": "typed", "message": {"role": "user", "content": prompt}})
        rows.append({**common, "parentUuid": user_id, "type": "assistant", "uuid": reply_id,
                     "timestamp": f"2026-12-01T09:0{n}:02.000Z",
                     "message": {"id": f"msg_earlier{n}", "type": "message", "role": "assistant",
                                 "model": "claude-haiku-4-5", "content": [{"type": "text", "text": reply}],
                                 "stop_reason": "end_turn", "stop_sequence": None,
                                 "usage": {"input_tokens": 10, "output_tokens": 10}}})
        parent = reply_id
    path = folder / f"{session}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("event", ["SessionEnd", "PreCompact"])
def test_the_detached_pass_captures_and_curates_through_the_real_claude_child(
    claude_exe: Path, api: FakeMessagesAPI, tmp_path: Path, project: Path, event: str,
) -> None:
    store = _offline_pass_store(tmp_path / "store")
    # The outer session bills a key, as a metered user's would; quipu's child must not inherit it.
    sandbox = Sandbox.create(claude_exe, tmp_path / "user", api, extra={
        "QUIPU_STORE": str(store.root), "ANTHROPIC_API_KEY": OUTER_KEY,
        "ANTHROPIC_AUTH_TOKEN": "gateway-token-of-the-outer-session"})
    quipu_in(sandbox, "install", "claude", "--project", "--project-dir", str(project))
    session = str(uuid.uuid4())
    _typed_turns(sandbox, project, session)

    if event == "SessionEnd":
        ask(sandbox, CONVERSATIONAL, project, resume=session)
    else:
        result = sandbox.prompt("/compact", cwd=project, resume=session)
        assert result.returncode == 0, result.stdout + result.stderr
    assert sandbox.api.messages()[0].headers.get("x-api-key") == OUTER_KEY
    wait_for(lambda: f"{event} sweep" in _hook_log(sandbox), f"the {event} pass to finish")

    calls = _assert_the_child_used_the_subscription_only(sandbox.api)
    asked = [set(c.tool("StructuredOutput")["input_schema"].get("required", ())) for c in calls]
    assert any("candidates" in r for r in asked) and any("verdict" in r for r in asked)
    captures = store.log(action="capture")
    assert [e.trailers["Quipu-Session"] for e in captures] == [session]
    assert CAPTURED_TITLE in git(store.root, "log", "--format=%s")
    (captured_id,) = [e.trailers["Quipu-Memory"] for e in captures]
    # The curator's verdict, also answered through the real child, retired the older rule.
    supersessions = store.log(action="supersede")
    assert [(e.trailers["Quipu-Supersedes"], e.trailers["Quipu-Superseded-By"]) for e in supersessions] == [
        (OLD_RULE, captured_id)]
    # The child kept no session of its own: the only transcript is the user's session.
    assert [path.stem for path in sandbox.transcripts()] == [session]


def test_without_a_subscription_login_the_child_never_gets_a_key_a_token_or_an_api_key_helper(
    claude_exe: Path, api: FakeMessagesAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    sandbox = Sandbox.create(claude_exe, tmp_path / "user", api, logged_in=False, extra={
        "ANTHROPIC_API_KEY": OUTER_KEY, "ANTHROPIC_AUTH_TOKEN": "gateway-token"})
    ran = tmp_path / "api-key-helper-ran"
    helper = tmp_path / "key-helper.sh"
    helper.write_text(f"#!/bin/sh\ntouch '{ran}'\necho sk-ant-api03-from-the-helper\n")
    helper.chmod(0o755)
    (sandbox.config_dir / "settings.json").write_text(json.dumps(
        {"apiKeyHelper": str(helper), "env": {"ANTHROPIC_API_KEY": "sk-ant-api03-from-settings-env"}}))
    for key, value in sandbox.env.items():
        monkeypatch.setenv(key, value)
    schema = {"type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"]}

    with pytest.raises(ModelUnavailable, match="not logged in"):
        ClaudeModel(timeout=120).complete("say hi", schema, purpose="test")

    assert not ran.exists()
    assert all("x-api-key" not in r.headers and "authorization" not in r.headers for r in api.requests)

    claude_code.log_in(sandbox.config_dir)  # now the user has a subscription login
    assert isinstance(api.model, ScriptedModel)
    api.model.enqueue({"echo": "hi"})
    assert ClaudeModel(timeout=120).complete("say hi", schema, purpose="test") == {"echo": "hi"}
    _assert_the_child_used_the_subscription_only(api)
    assert not ran.exists()
