"""The real Codex CLI runs quipu's hooks and MCP server, offline, against a loopback fake of the Responses API.

Each test runs the client from the npm registry (``testing.codex_cli``, pinned) as a throw-away user
whose model provider is a ``FakeResponsesAPI`` on 127.0.0.1, and asserts on the requests the client
sent: what quipu's hooks put in front of the model and which of quipu's tools were offered. The last
test wires Claude Code (``testing.claude_code``) to the same store at once.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from quipu.capture import profile
from quipu.model import ScriptedModel
from quipu.store.store import Store
from testing import claude_code, codex_cli
from testing.fake_messages_api import FakeMessagesAPI
from testing.fake_responses_api import FakeResponsesAPI, Recorded, function_call, message
from testing.fixtures import example_store

TOPICAL = "How do we deploy shop-api to production?"
FOLLOW_UP = "ok go ahead"
MEMORY_BLOCK = "<quipu-memory"
REMEMBERED = "The payments team rotates the Stripe webhook signing secret every 90 days through Vault."
WAIT = 150.0


@pytest.fixture(scope="module")
def codex_exe() -> Path:
    try:
        return codex_cli.install()
    except codex_cli.NpmMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return example_store(tmp_path / "store")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def quipu_in(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "quipu", *args], capture_output=True, text=True, env=env, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def session_id(result: subprocess.CompletedProcess[str]) -> str:
    found = re.search(r"session id: ([0-9a-f-]{36})", result.stderr)
    assert found, result.stderr[-2000:]
    return found.group(1)


def asked(api: FakeResponsesAPI, prompt: str, since: int) -> Recorded:
    """The request of this run that carried ``prompt`` as its latest human text."""
    new = [r for r in api.responses()[since:] if any(prompt == t.strip() for t in r.user_texts())]
    assert new, f"no request carried {prompt!r}"
    return new[0]


def blocks(request: Recorded) -> list[str]:
    return [t for t in request.user_texts() if MEMORY_BLOCK in t]


def test_project_install_fences_the_memory_adds_nothing_to_a_follow_up_starts_with_the_card_and_offers_quipus_tools(
    codex_exe: Path, store: Store, project: Path, tmp_path: Path,
) -> None:
    store.commit({profile.PROFILE_PATH: b"# Profile\n\n- Environment: the shop-api web shop backend runs on Debian 12\n"},
                 "hand edit", {"Quipu-Action": "edit", "Quipu-Memory": "profile"})
    with FakeResponsesAPI(reply=lambda r: "Noted.") as api:
        sandbox = codex_cli.Sandbox.create(codex_exe, tmp_path / "user", api, trusted=[project],
                                           extra={"QUIPU_STORE": str(store.root)})
        install = quipu_in(dict(sandbox.env), "install", "codex", "--project", "--project-dir", str(project))
        written = (project / ".codex" / "hooks.json").read_text() + (project / ".codex" / "config.toml").read_text()
        assert str(tmp_path) not in written and str(Path(sys.executable).parent) not in written, install.stdout

        first = sandbox.prompt(TOPICAL, cwd=project)
        assert first.returncode == 0, first.stdout + first.stderr[-3000:]
        topical = asked(api, TOPICAL, 0)
        (block,) = blocks(topical)
        assert block.startswith(MEMORY_BLOCK) and "(id deploy-procedure," in block and "How we deploy shop-api" in block
        assert "reference data" in block.lower()
        # The SessionStart card, as under Claude Code.
        (card,) = [t for t in topical.user_texts() if "<quipu-always-on" in t]
        assert "the shop-api web shop backend runs on Debian 12" in card
        offered = set(topical.tools())
        assert {"mcp__quipu__remember", "mcp__quipu__search_memory", "mcp__quipu__get_memory"} <= offered, sorted(offered)

        before = len(api.responses())
        second = sandbox.prompt(FOLLOW_UP, cwd=project, resume=session_id(first))
        assert second.returncode == 0, second.stdout + second.stderr[-3000:]
        follow = asked(api, FOLLOW_UP, before)
        # The resumed request replays the first turn's block; the follow-up adds none.
        assert blocks(follow) == [block]
        assert "Noted." in second.stdout
    # What Codex tried to reach elsewhere arrived at the fake and was refused.
    assert all(r.method == "CONNECT" for r in api.elsewhere()), [f"{r.method} {r.path}" for r in api.elsewhere()]


def test_user_install_recalls_and_uninstall_gives_back_the_users_own_hooks_and_config(
    codex_exe: Path, store: Store, project: Path, tmp_path: Path,
) -> None:
    own_hook = ('{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": '
                '"echo \'{\\"hookSpecificOutput\\": {\\"hookEventName\\": \\"UserPromptSubmit\\", '
                '\\"additionalContext\\": \\"own-hook: the user keeps a prompt log\\"}}\'"}]}]}}\n')
    with FakeResponsesAPI(reply=lambda r: "Noted.") as api:
        sandbox = codex_cli.Sandbox.create(codex_exe, tmp_path / "user", api, extra={"QUIPU_STORE": str(store.root)})
        config = sandbox.codex_home / "config.toml"
        own_config = config.read_text(encoding="utf-8")
        (sandbox.codex_home / "hooks.json").write_text(own_hook, encoding="utf-8")
        quipu_in(dict(sandbox.env), "install", "codex", "--user")

        with_quipu = sandbox.prompt(TOPICAL, cwd=project)
        assert with_quipu.returncode == 0, with_quipu.stderr[-3000:]
        request = asked(api, TOPICAL, 0)
        assert "(id deploy-procedure," in blocks(request)[0]
        assert "own-hook: the user keeps a prompt log" in request.text()

        quipu_in(dict(sandbox.env), "uninstall", "codex", "--user")
        assert (sandbox.codex_home / "hooks.json").read_text(encoding="utf-8") == own_hook
        assert config.read_text(encoding="utf-8") == own_config
        before = len(api.responses())
        without = sandbox.prompt(TOPICAL, cwd=project)
        assert without.returncode == 0, without.stderr[-3000:]
        request = asked(api, TOPICAL, before)
        assert blocks(request) == [] and "mcp__quipu__remember" not in request.tools()
        assert "own-hook: the user keeps a prompt log" in request.text()


def _remember_through_mcp(request: Recorded) -> list[dict[str, Any]] | None:
    """The scripted Codex model: call quipu's ``remember`` once, then answer in text."""
    if "mcp__quipu__remember" in request.tools() and not request.tool_outputs():
        call = function_call("remember", {"title": "Stripe webhook secret rotation", "body": REMEMBERED,
                                          "class": "reference", "topics": ["payments", "stripe"]}, "call_remember_1")
        return [{**call, "namespace": "mcp__quipu"}]
    return [message("Saved.")]


def _wait_for(predicate: Any, what: str) -> None:
    end = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.5)


@pytest.mark.slow
def test_claude_code_and_codex_share_one_store_and_one_archive(
    codex_exe: Path, store: Store, project: Path, tmp_path: Path,
) -> None:
    try:
        claude_exe = claude_code.install()
    except claude_code.NpmMissing as exc:
        pytest.skip(str(exc))
    with FakeResponsesAPI(respond=_remember_through_mcp) as openai, \
            FakeMessagesAPI(ScriptedModel(), reply=lambda r: "Noted.") as anthropic:
        codex = codex_cli.Sandbox.create(codex_exe, tmp_path / "user", openai, trusted=[project],
                                         extra={"QUIPU_STORE": str(store.root)})
        # One person, one QUIPU_HOME and one store, two agents.
        claude = claude_code.Sandbox.create(claude_exe, tmp_path / "user", anthropic,
                                            extra={"QUIPU_STORE": str(store.root)})
        env = {**claude.env, "CODEX_HOME": codex.env["CODEX_HOME"]}
        quipu_in(env, "install", "codex", "--project", "--project-dir", str(project))
        quipu_in(env, "install", "claude", "--project", "--project-dir", str(project))

        saved = codex.prompt("Please remember how we rotate the Stripe webhook secret.", cwd=project)
        assert saved.returncode == 0, saved.stdout + saved.stderr[-3000:]
        outputs = [o for r in openai.responses() for o in r.tool_outputs() if o.get("call_id") == "call_remember_1"]
        assert outputs, "Codex sent no result of quipu's remember back"
        assert "error" not in json.dumps(outputs).lower(), outputs
        found = json.loads(quipu_in(env, "search", "Stripe webhook secret rotation", "--json").stdout)
        assert any("Stripe webhook" in json.dumps(hit) for hit in (found if isinstance(found, list) else found["hits"]))

        recalled = claude.prompt("How often do we rotate the Stripe webhook signing secret?", cwd=project)
        assert recalled.returncode == 0, recalled.stdout + recalled.stderr
        texts = [t for r in anthropic.messages() for t in r.user_texts() if MEMORY_BLOCK in t]
        assert texts and "Stripe webhook secret rotation" in texts[0], texts

        # Both sessions reach the one archive (the session hooks append detached; index catches up).
        _wait_for(lambda: codex.rollouts() and claude.transcripts(), "both agents' session files")
        quipu_in(env, "history", "index", "--json")
        hits = json.loads(quipu_in(env, "history", "search", "Stripe webhook secret", "--json").stdout)
        agents = {hit["agent"] for hit in hits["hits"]}
        assert agents == {"claude", "codex"}, hits


@pytest.mark.slow
def test_a_codex_session_end_feeds_the_same_capture_and_archive_through_the_users_model_command(
    codex_exe: Path, project: Path, tmp_path: Path,
) -> None:
    from tests.claude_code_e2e_test import CAPTURE_PROMPT, CAPTURED_TITLE, _offline_pass_store, offline_model

    try:
        claude_exe = claude_code.install()
    except claude_code.NpmMissing as exc:
        pytest.skip(str(exc))
    store = _offline_pass_store(tmp_path / "store")
    with FakeResponsesAPI(reply=lambda r: "Understood.") as openai, \
            FakeMessagesAPI(ScriptedModel(responder=offline_model)) as anthropic:
        # The model of the offline pass is the user's own `claude -p` (the default), logged in.
        claude = claude_code.Sandbox.create(claude_exe, tmp_path / "user", anthropic)
        model_env = {k: v for k, v in claude.env.items() if k.startswith(("CLAUDE", "ANTHROPIC", "DISABLE"))}
        codex = codex_cli.Sandbox.create(codex_exe, tmp_path / "user", openai, trusted=[project],
                                         extra={"QUIPU_STORE": str(store.root), **model_env,
                                                "PATH": claude.env["PATH"]})
        quipu_in(dict(codex.env), "install", "codex", "--project", "--project-dir", str(project))

        result = codex.prompt(CAPTURE_PROMPT, cwd=project)
        assert result.returncode == 0, result.stdout + result.stderr[-3000:]
        session = session_id(result)
        _wait_for(lambda: any(e.trailers.get("Quipu-Session") == session for e in store.log(action="capture")),
                  "the capture of the Codex session")
        assert CAPTURED_TITLE in subprocess.run(["git", "-C", str(store.root), "log", "--format=%s"],
                                                capture_output=True, text=True, check=True).stdout
        assert anthropic.structured_calls(), "the capture never asked the user's model"
        # The SessionEnd hook also appended the session to the archive, labelled with its agent.
        def archived() -> list[dict[str, Any]]:
            found = quipu_in(dict(codex.env), "history", "search", "Alembic revision files", "--json").stdout
            return [h for h in json.loads(found)["hits"] if h["session"] == session]
        _wait_for(archived, "the Codex session in the history archive")
        assert {h["agent"] for h in archived()} == {"codex"}
