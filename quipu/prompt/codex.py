"""Codex CLI session files ("rollouts"): which record is a person's prompt, which the agent's reply.

On the prompt path (loaded only when the transcript is a rollout, see ``quipu.prompt.transcript``):
it imports nothing at all. Codex writes one
JSONL file per session, ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl``;
each line is ``{"timestamp", "type", "payload"}``. Contract (checked against Codex 0.171.0's
files by tests/codex_cli_e2e_test.py):
- ``is_rollout(path)``: the file name is a rollout's (``rollout-*.jsonl``), so the transcript
  readers (``quipu.prompt.transcript``) pick these predicates instead of Claude Code's.
- ``human_text(record)``: the text a person typed, from the ``event_msg`` Codex records for each
  prompt (``item_completed`` of a ``UserMessage``, or the older ``user_message``). The model-facing
  copies (``response_item`` of role ``user``) are not read: they carry the environment context and
  the project instructions Codex adds. Codex's own ``<environment_context>``-style blocks are never
  a prompt (``quipu.prompt.transcript`` applies its machine-text rule on top).
- ``assistant_text(record)``: the text of an assistant ``message`` response item; reasoning,
  tool calls and their output are not text.
- ``tool_call(record)``: (name, argument summary) of a ``function_call`` item, else None.
- ``SKIP``: bytes that mark a line of tool output, skipped before it is parsed.
- ``meta(record)``: the ``session_meta`` payload (session id, cwd, source), else None; a session
  whose source is not a string is a sub-agent's.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

AGENT = "codex"
SKIP = (b'"type":"function_call_output"', b'"type":"custom_tool_call_output"', b'"type":"exec_command_end"')
# Blocks Codex itself puts in a user-role message (never typed by a person).
_CODEX_BLOCKS = ("<environment_context>", "<user_instructions>", "<turn_aborted>", "<user_shell_command>",
                 "# agents.md instructions")


def is_rollout(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.startswith("rollout-") and name.endswith(".jsonl")


def _payload(record: "Any", kind: str) -> "dict[str, Any] | None":
    if not isinstance(record, dict) or record.get("type") != kind:
        return None
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else None


def _is_codex_block(text: str) -> bool:
    return text.lstrip()[:40].lower().startswith(_CODEX_BLOCKS)


def human_text(record: "Any") -> "str | None":
    payload = _payload(record, "event_msg")
    if payload is None:
        return None
    text = None
    if payload.get("type") == "item_completed":
        item = payload.get("item")
        if isinstance(item, dict) and item.get("type") == "UserMessage" and isinstance(item.get("content"), list):
            parts = [c["text"] for c in item["content"]
                     if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)]
            text = "\n".join(parts)
    elif payload.get("type") == "user_message" and isinstance(payload.get("message"), str):
        text = payload["message"]
    if not text or not text.strip() or _is_codex_block(text):
        return None
    return text


def human_id(record: "Any") -> str:
    """A stable id of a prompt record ('' when it has none)."""
    payload = _payload(record, "event_msg") or {}
    item = payload.get("item")
    found = item.get("id") if isinstance(item, dict) else payload.get("turn_id")
    return found if isinstance(found, str) else ""


def assistant_text(record: "Any") -> "str | None":
    payload = _payload(record, "response_item")
    if payload is None or payload.get("type") != "message" or payload.get("role") != "assistant":
        return None
    content = payload.get("content")
    if not isinstance(content, list):
        return None
    parts = [c["text"] for c in content
             if isinstance(c, dict) and c.get("type") == "output_text" and isinstance(c.get("text"), str)]
    text = "\n".join(parts).strip()
    return text or None


def item_id(record: "Any") -> str:
    payload = _payload(record, "response_item") or {}
    found = payload.get("id")
    return found if isinstance(found, str) else ""


def tool_call(record: "Any") -> "tuple[str, dict[str, Any]] | None":
    payload = _payload(record, "response_item")
    if payload is None or payload.get("type") not in ("function_call", "custom_tool_call", "local_shell_call"):
        return None
    name = payload["name"] if isinstance(payload.get("name"), str) else "tool"
    args = payload.get("arguments")
    if isinstance(args, str):
        import json  # offline readers only: the hook never reads tool calls

        try:
            args = json.loads(args)
        except ValueError:
            args = {"input": args}
    if not isinstance(args, dict):
        args = {"input": payload["input"]} if isinstance(payload.get("input"), str) else {}
    command = args.get("cmd") if "cmd" in args else args.get("command")
    if isinstance(command, list):
        args = {**args, "command": " ".join(str(c) for c in command)}
    elif isinstance(command, str):
        args = {**args, "command": command}
    return name, args


def meta(record: "Any") -> "dict[str, Any] | None":
    return _payload(record, "session_meta")
