"""Codex CLI rollout files, read by the prompt hook's tail reader, capture's conversation and the history archive.

The records are in the shape Codex 0.171.0 writes (checked against the real client by
tests/codex_cli_e2e_test.py): a person's prompt as an ``event_msg``, the model-facing copies and
Codex's own context blocks as ``response_item`` messages of role ``user``, tool output as
``function_call_output``.
"""
from __future__ import annotations

import json
from pathlib import Path

from quipu.history.reader import read_session
from quipu.prompt import transcript

SID = "01a242dd-3aa1-7e33-b42e-87afd72e25b4"


def _prompt(n: int, text: str) -> list[dict[str, object]]:
    return [
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/srv/shop</cwd>\n</environment_context>"}]}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": text}]}},
        {"type": "event_msg", "payload": {"type": "item_completed", "item": {
            "type": "UserMessage", "id": f"u{n}", "content": [{"type": "text", "text": text}]}}},
    ]


def _reply(n: int, text: str) -> list[dict[str, object]]:
    return [
        {"type": "response_item", "payload": {"type": "function_call", "id": f"f{n}", "name": "exec_command",
                                              "arguments": json.dumps({"cmd": "git log -1"}), "call_id": f"c{n}"}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": f"c{n}",
                                              "output": "commit abc SECRET-LOOKING OUTPUT " * 50}},
        {"type": "response_item", "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hmm"}]}},
        {"type": "response_item", "payload": {"type": "message", "id": f"m{n}", "role": "assistant", "content": [
            {"type": "output_text", "text": text}]}},
    ]


def rollout(folder: Path, records: list[dict[str, object]]) -> Path:
    path = folder / f"rollout-2026-12-04T21-02-04-{SID}.jsonl"
    meta = {"type": "session_meta", "payload": {"id": SID, "cwd": "/srv/shop", "source": "cli"}}
    lines = [json.dumps({"timestamp": "2026-12-04T21:02:04.000Z", **r}, separators=(",", ":"))
             for r in [meta, *records]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_tail_reader_finds_the_previous_prompt_and_reply_in_a_rollout(tmp_path: Path) -> None:
    path = rollout(tmp_path, [*_prompt(1, "How do we deploy shop-api?"), *_reply(1, "Through the CI pipeline."),
                              *_prompt(2, "ok go ahead")])

    assert transcript.read_tail(str(path), "ok go ahead") == ("How do we deploy shop-api?", "Through the CI pipeline.")


def test_capture_reads_the_persons_prompts_and_the_replies_and_nothing_codex_added(tmp_path: Path) -> None:
    path = rollout(tmp_path, [*_prompt(1, "How do we deploy shop-api?"), *_reply(1, "Through the CI pipeline.")])

    assert transcript.conversation(str(path)) == [("user", "How do we deploy shop-api?"),
                                                  ("assistant", "Through the CI pipeline.")]


def test_the_history_reader_labels_a_rollout_codex_and_leaves_machine_turns_and_tool_output_out(tmp_path: Path) -> None:
    path = rollout(tmp_path, [*_prompt(1, "How do we deploy shop-api?"), *_reply(1, "Through the CI pipeline."),
                              *_prompt(2, "<user_instructions>be brief</user_instructions>")])

    session = read_session(path)
    assert (session.session_id, session.project, session.agent, session.sidechain) == (SID, "/srv/shop", "codex", False)
    assert [(t.role, t.text) for t in session.turns] == [
        ("user", "How do we deploy shop-api?"),
        ("assistant", "[exec_command: git log -1]\nThrough the CI pipeline."),
    ]
    assert [t.key for t in session.turns] == [f"{SID}/u1", f"{SID}/f1"]
    assert "SECRET-LOOKING" not in json.dumps([t.text for t in session.turns])


def test_a_claude_code_transcript_never_loads_codexs_reader_and_a_rollout_loads_it_from_bytecode(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = rollout(tmp_path, [*_prompt(1, "How do we deploy shop-api?"), *_reply(1, "Through the CI pipeline.")])
    claude = tmp_path / "session.jsonl"
    claude.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "How do we deploy?"}}) + "\n")
    script = ("import sys; sys.path.append(sys.argv[1]); import quipu.prompt as p; p.load_prompt_path(); "
              "from quipu.prompt import transcript as t; t.read_tail(sys.argv[2]); "
              "print('quipu.prompt.codex' in sys.modules); t.read_tail(sys.argv[3]); "
              "print('quipu.prompt.codex' in sys.modules)")
    root = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run([sys.executable, "-I", "-S", "-c", script, root, str(claude), str(path)],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]
