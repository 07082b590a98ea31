from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from quipu.errors import FatalError
from quipu.model import CHILD_ENV
from quipu.model import TIMEOUT_SETTING
from quipu.model import Budget
from quipu.model import BudgetExceeded
from quipu.model import ClaudeModel
from quipu.model import CommandModel
from quipu.model import InvalidAnswer
from quipu.model import MeteredModel
from quipu.model import ModelError
from quipu.model import ModelUnavailable
from quipu.model import ScriptedModel
from quipu.model import Usage
from quipu.model import get_model
from quipu.model import schema_errors

FIXTURES = Path(__file__).parent / "fixtures" / "model"
ECHO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"echo": {"type": "string"}, "model": {"type": "string"}},
    "required": ["echo"],
}


def _install(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / name
    exe.write_text(f"#!{sys.executable}\n{body}")
    exe.chmod(0o755)


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake `claude` first on PATH; returns the log of what each run saw."""
    bin_dir = tmp_path / "bin"
    _install(bin_dir, "claude", (FIXTURES / "fake_claude.py").read_text())
    log = tmp_path / "claude-seen.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-metered-must-not-leak")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "gateway-token-must-not-leak")
    monkeypatch.setenv("CLAUDECODE", "1")  # as inside a Claude Code hook
    monkeypatch.chdir(tmp_path)
    return log


def _seen(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


# --- claude backend (real subprocess, fake CLI) ------------------------------------------------

def test_claude_child_is_tool_less_hookless_and_off_the_metered_api(
    fake_claude: Path, tmp_path: Path,
) -> None:
    answer = ClaudeModel(timeout=30).complete("remember the deploy", ECHO_SCHEMA, purpose="aliases")
    assert answer == {"echo": "remember the deploy", "model": "haiku"}
    (seen,) = _seen(fake_claude)
    assert seen["problems"] == []
    assert seen["prompt"] == "remember the deploy"
    assert seen["schema"] == ECHO_SCHEMA
    assert seen["argv"][seen["argv"].index("--tools") + 1] == ""
    assert Path(seen["cwd"]).resolve() != tmp_path.resolve()
    assert not Path(seen["cwd"]).exists()  # the temporary cwd is cleaned up


def test_claude_spec_selects_the_model(fake_claude: Path) -> None:
    model = get_model("claude:sonnet")
    assert model.complete("x", ECHO_SCHEMA, purpose="t") == {"echo": "x", "model": "sonnet"}
    assert _seen(fake_claude)[0]["model"] == "sonnet"


def test_claude_falls_back_to_result_text(fake_claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "result-text")
    assert get_model("claude").complete("y", ECHO_SCHEMA, purpose="t")["echo"] == "y"


def test_claude_success_without_structured_output_is_invalid(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "no-structure")
    with pytest.raises(InvalidAnswer, match="not JSON"):
        ClaudeModel().complete("y", ECHO_SCHEMA, purpose="t")


def test_claude_answer_not_matching_schema_is_invalid(fake_claude: Path) -> None:
    schema = {**ECHO_SCHEMA, "required": ["echo", "aliases"]}
    with pytest.raises(InvalidAnswer, match="missing required key 'aliases'"):
        ClaudeModel().complete("y", schema, purpose="t")


def test_claude_missing_from_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ModelUnavailable) as e:
        ClaudeModel().complete("x", ECHO_SCHEMA, purpose="t")
    assert "not on PATH" in str(e.value)
    assert "install Claude Code" in str(e.value)
    assert "run `claude` once to log in" in str(e.value)


def test_claude_not_logged_in(fake_claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "logged-out")
    with pytest.raises(ModelUnavailable) as e:
        ClaudeModel().complete("x", ECHO_SCHEMA, purpose="t")
    assert "not logged in" in str(e.value)
    assert "run `claude`, then `/login`" in str(e.value)


def test_claude_timeout_kills_the_child(fake_claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "sleep")
    with pytest.raises(ModelUnavailable) as e:
        ClaudeModel(timeout=1).complete("x", ECHO_SCHEMA, purpose="sweep")
    child = json.loads(fake_claude.read_text().splitlines()[-1])["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # killed and reaped, not left sleeping
    assert "within 1 s" in str(e.value)
    assert TIMEOUT_SETTING in str(e.value)


def test_claude_crash_without_json_is_a_model_error(fake_claude: Path) -> None:
    _install(fake_claude.parent / "bin", "claude-broken",
             "import sys\nsys.stderr.write('boom: segfault')\nsys.exit(3)\n")
    with pytest.raises(ModelError, match="exit 3.*boom: segfault"):
        ClaudeModel(executable="claude-broken").complete("x", ECHO_SCHEMA, purpose="t")


def test_claude_error_result_is_invalid_answer(fake_claude: Path) -> None:
    result = {"type": "result", "subtype": "error_max_structured_output_retries", "is_error": True}
    _install(fake_claude.parent / "bin", "claude-retries", f"print({json.dumps(json.dumps(result))})\n")
    with pytest.raises(InvalidAnswer, match="error_max_structured_output_retries"):
        ClaudeModel(executable="claude-retries").complete("x", ECHO_SCHEMA, purpose="t")


def test_claude_success_without_any_answer_is_invalid(fake_claude: Path) -> None:
    result = {"type": "result", "subtype": "success", "is_error": False}
    _install(fake_claude.parent / "bin", "claude-empty", f"print({json.dumps(json.dumps(result))})\n")
    with pytest.raises(InvalidAnswer, match="without structured output"):
        ClaudeModel(executable="claude-empty").complete("x", ECHO_SCHEMA, purpose="t")


def test_claude_nested_session_refusal_is_explained(fake_claude: Path) -> None:
    _install(fake_claude.parent / "bin", "claude-nested",
             "import sys\nsys.stderr.write('Error: Claude Code cannot be launched inside another "
             "Claude Code session.')\nsys.exit(1)\n")
    with pytest.raises(ModelUnavailable, match="nested"):
        ClaudeModel(executable="claude-nested").complete("x", ECHO_SCHEMA, purpose="t")


# --- command backend ---------------------------------------------------------------------------

ECHO_COMMAND = """\
import json, os, sys
req = json.load(sys.stdin)
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
if mode == "fail":
    sys.stderr.write("no quota left")
    sys.exit(4)
if mode == "garbage":
    print("I think the answer is yes")
    sys.exit(0)
if mode == "sleep":
    import time; time.sleep(60)
print(json.dumps({"echo": req["prompt"], "model": req["purpose"] + "/" + os.environ["QUIPU_CHILD"],
                  "schema_keys": sorted(req["schema"])}))
"""


@pytest.fixture
def echo_command(tmp_path: Path) -> str:
    script = tmp_path / "echo model.py"  # a space, to prove the spec is split with shlex
    script.write_text(ECHO_COMMAND)
    return shlex.join([sys.executable, str(script)])


def test_command_model_gets_prompt_schema_purpose_as_json(echo_command: str) -> None:
    answer = get_model(f"command:{echo_command}").complete("hi", ECHO_SCHEMA, purpose="dedupe")
    assert answer == {"echo": "hi", "model": "dedupe/1", "schema_keys": ["properties", "required", "type"]}


@pytest.mark.parametrize(("mode", "error", "match"), [
    ("fail", ModelError, "exited 4: no quota left"),
    ("garbage", InvalidAnswer, "not JSON"),
])
def test_command_model_failures(echo_command: str, mode: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        get_model(f"command:{echo_command} {mode}").complete("hi", ECHO_SCHEMA, purpose="t")


def test_command_model_timeout(echo_command: str) -> None:
    with pytest.raises(ModelUnavailable, match=TIMEOUT_SETTING):
        get_model(f"command:{echo_command} sleep", timeout=1).complete("hi", ECHO_SCHEMA, purpose="t")


def test_command_model_missing_program(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="model command not found"):
        CommandModel([str(tmp_path / "nope")]).complete("hi", ECHO_SCHEMA, purpose="t")


def test_command_model_empty_command() -> None:
    with pytest.raises(ModelError, match="empty"):
        get_model("command:  ")


# --- scripted backend --------------------------------------------------------------------------

def test_scripted_model_answers_in_order_then_runs_out() -> None:
    model = ScriptedModel([{"echo": "one"}]).enqueue({"echo": "two"})
    assert model.complete("a", ECHO_SCHEMA, purpose="p1") == {"echo": "one"}
    assert model.complete("b", ECHO_SCHEMA, purpose="p2") == {"echo": "two"}
    with pytest.raises(ModelUnavailable, match="no answer left for call 3 \\(p3\\)"):
        model.complete("c", ECHO_SCHEMA, purpose="p3")
    assert [c[0] for c in model.calls] == ["a", "b", "c"]


def test_scripted_model_responder_after_queue() -> None:
    model = ScriptedModel(responder=lambda prompt, schema, purpose: {"echo": prompt.upper()})
    model.enqueue('{"echo": "raw text"}')
    assert model.complete("x", ECHO_SCHEMA, purpose="t") == {"echo": "raw text"}
    assert model.complete("y", ECHO_SCHEMA, purpose="t") == {"echo": "Y"}


@pytest.mark.parametrize(("answer", "match"), [
    ("sure! here you go", "not JSON"),
    ("[1, 2]", "not an object"),
    ("```json\n{\"echo\": 3}\n```", "expected string, got int"),
    ({"model": "m"}, "missing required key 'echo'"),
])
def test_scripted_model_garbage_is_a_catchable_invalid_answer(answer: object, match: str) -> None:
    model = get_model("scripted")
    assert isinstance(model, ScriptedModel)
    model.enqueue(answer)  # type: ignore[arg-type]
    with pytest.raises(InvalidAnswer, match=match):
        model.complete("x", ECHO_SCHEMA, purpose="t")


def test_scripted_model_fenced_json_is_accepted() -> None:
    model = ScriptedModel(["```json\n{\"echo\": \"ok\"}\n```"])
    assert model.complete("x", ECHO_SCHEMA, purpose="t") == {"echo": "ok"}


def test_scripted_model_raises_an_enqueued_exception() -> None:
    model = ScriptedModel([ModelUnavailable("simulated timeout")])
    with pytest.raises(ModelUnavailable, match="simulated timeout"):
        model.complete("x", ECHO_SCHEMA, purpose="t")


# --- schema subset -----------------------------------------------------------------------------

def test_schema_errors_subset() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["kind", "aliases", "n"],
        "properties": {
            "kind": {"type": "string", "enum": ["fact", "rule"]},
            "aliases": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
            "n": {"type": ["integer", "null"]},
            "score": {"type": "number"},
        },
    }
    assert schema_errors({"kind": "fact", "aliases": ["a"], "n": None, "score": 1}, schema) == []
    assert schema_errors({"kind": "wish", "aliases": [], "n": True, "x": 1, "score": False}, schema) == [
        "$: unexpected key 'x'",
        "$.kind: 'wish' is not one of ['fact', 'rule']",
        "$.aliases: fewer than 1 items",
        "$.n: expected integer|null, got bool",
        "$.score: expected number, got bool",
    ]
    assert schema_errors({"kind": "rule", "aliases": ["a", 2, "c"], "n": 1}, schema) == [
        "$.aliases: more than 2 items",
        "$.aliases[1]: expected string, got int",
    ]
    assert schema_errors([], schema) == ["$: expected object, got list"]
    # no "type" and no "items": only what is stated is checked
    assert schema_errors({"tags": [1, "x"]}, {"properties": {"tags": {"maxItems": 5}}}) == []


# --- budget and calls log ----------------------------------------------------------------------

def test_budget_refuses_the_call_past_max_calls_before_making_it(tmp_path: Path) -> None:
    inner = ScriptedModel(responder=lambda p, s, u: {"echo": p})
    log = tmp_path / "logs" / "model-calls.jsonl"
    model = MeteredModel(inner, Budget(max_calls=2), log)
    model.complete("a", ECHO_SCHEMA, purpose="aliases")
    model.complete("b", ECHO_SCHEMA, purpose="aliases")
    with pytest.raises(BudgetExceeded, match="2 of 2 calls used"):
        model.complete("c", ECHO_SCHEMA, purpose="dedupe")
    assert len(inner.calls) == 2  # refused before the model saw it
    assert model.summary().calls == 2
    assert model.summary().refused == 1
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(x["purpose"], x["ok"], x["refused"]) for x in lines] == [
        ("aliases", True, False), ("aliases", True, False), ("dedupe", False, True),
    ]


def test_budget_refuses_the_call_past_max_chars(tmp_path: Path) -> None:
    inner = ScriptedModel(responder=lambda p, s, u: {"echo": p})
    schema_chars = len(json.dumps(ECHO_SCHEMA))
    model = MeteredModel(inner, Budget(max_chars=2 * schema_chars + 15), tmp_path / "calls.jsonl")
    model.complete("0123456789", ECHO_SCHEMA, purpose="t")
    with pytest.raises(BudgetExceeded, match="characters would pass the limit"):
        model.complete("0123456789", ECHO_SCHEMA, purpose="t")
    model.complete("01234", ECHO_SCHEMA, purpose="t")  # a smaller call still fits exactly
    assert len(inner.calls) == 2
    assert model.summary() == Usage(
        calls=2, chars_sent=2 * schema_chars + 15,
        chars_received=len('{"echo": "0123456789"}') + len('{"echo": "01234"}'), refused=1, errors=0,
    )


def test_budget_exceeded_is_not_a_model_error() -> None:
    assert issubclass(BudgetExceeded, FatalError)
    assert not issubclass(BudgetExceeded, ModelError)


def test_calls_log_records_every_call_including_failures(tmp_path: Path) -> None:
    inner = ScriptedModel([{"echo": "ok"}, "garbage", {"echo": "again"}])
    log = tmp_path / "calls.jsonl"
    model = MeteredModel(inner, Budget(), log)
    model.complete("p1", ECHO_SCHEMA, purpose="propose")
    with pytest.raises(InvalidAnswer):
        model.complete("p2", ECHO_SCHEMA, purpose="aliases")
    model.complete("p3", ECHO_SCHEMA, purpose="dedupe")
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["purpose"] for x in lines] == ["propose", "aliases", "dedupe"]
    assert [x["ok"] for x in lines] == [True, False, True]
    assert lines[1]["error"].startswith("InvalidAnswer: scripted answered text that is not JSON")
    assert lines[0]["backend"] == "scripted"
    assert lines[0]["chars_sent"] == 2 + len(json.dumps(ECHO_SCHEMA))
    assert lines[0]["chars_received"] == len('{"echo": "ok"}')
    assert lines[1]["chars_received"] == 0
    assert {"time", "duration_s"} <= set(lines[0])
    assert model.summary() == Usage(calls=3, chars_sent=3 * lines[0]["chars_sent"],
                                    chars_received=lines[0]["chars_received"] + len('{"echo": "again"}'),
                                    refused=0, errors=1)


def test_metered_model_without_log_and_named_after_inner(fake_claude: Path) -> None:
    model = MeteredModel(get_model("claude:opus"), Budget(max_calls=1), None)
    assert model.name == "claude:opus"
    assert model.complete("z", ECHO_SCHEMA, purpose="t")["model"] == "opus"


def test_get_model_rejects_unknown_specs() -> None:
    for spec in ("gpt", "scripted:x", ""):
        with pytest.raises(ModelError, match="use `claude`"):
            get_model(spec)


def test_child_marker_name() -> None:
    assert CHILD_ENV == "QUIPU_CHILD"
