"""Which transcript records a human typed, and the bounded tail read."""
from __future__ import annotations

import json
from pathlib import Path

from quipu.prompt import transcript


def user(content: object, **extra: object) -> dict[str, object]:
    return {"type": "user", "message": {"role": "user", "content": content}, **extra}


def assistant(text: str) -> dict[str, object]:
    return {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}, {"type": "tool_use", "name": "Bash", "input": {}}]}}


def test_a_typed_prompt_is_human() -> None:
    assert transcript.human_text(user("how do we deploy?")) == "how do we deploy?"
    assert transcript.human_text(user("how?", promptSource="typed", origin={"kind": "human"})) == "how?"
    assert transcript.human_text(user([{"type": "text", "text": "look at this"}, {"type": "image"}])) == "look at this"


def test_machine_records_are_not_human() -> None:
    machine = [
        user([{"type": "tool_result", "content": "ok"}]),
        user("x", toolUseResult={"stdout": "ok"}),
        user("x", sourceToolAssistantUUID="abc"),
        user("x", isMeta=True),
        user("x", isCompactSummary=True),
        user("x", isVisibleInTranscriptOnly=True),
        user("x", isSidechain=True),
        user("x", agentId="a1"),
        user("x", promptSource="system"),
        user("x", origin={"kind": "task-notification"}),
        user("<task-notification><status>done</status></task-notification>"),
        user("<command-name>/clear</command-name>"),
        user("[Request interrupted by user]"),
        user("This session is being continued from a previous conversation that ran out of context."),
        {"type": "system", "subtype": "local_command", "content": "<command-name>/resume</command-name>"},
        {"type": "queue-operation", "operation": "enqueue", "content": "<task-notification/>"},
        {"type": "summary", "summary": "deploy"},
        "not a record",
    ]
    assert [transcript.human_text(r) for r in machine] == [None] * len(machine)


def test_tail_read_finds_previous_prompt_and_last_assistant_text(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    records = [user("first question about kafka"), assistant("kafka answer"), user("second question about nginx"),
               assistant("nginx answer"), user([{"type": "tool_result", "content": "x"}]), user("ok go ahead")]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert transcript.read_tail(str(path), "ok go ahead") == ("second question about nginx", "nginx answer")


def test_tail_read_is_bounded_on_a_huge_transcript(tmp_path: Path) -> None:
    """A 64 GiB transcript (sparse: it takes no disk) could not be read whole into memory; the
    tail is found all the same, and nothing before the window is looked at."""
    path = tmp_path / "big.jsonl"
    filler = json.dumps(assistant("x" * 10_000))
    with open(path, "w") as fh:
        fh.write(json.dumps(user("the very first prompt")) + "\n")
        fh.truncate(1 << 36)
        fh.seek(1 << 36)
        fh.write("\n")
        for _ in range(50):
            fh.write(filler + "\n")
        fh.write(json.dumps(user("latest human prompt about redis")) + "\n")
        fh.write(json.dumps(assistant("redis answer")) + "\n")
    assert transcript.read_tail(str(path), "now what") == ("latest human prompt about redis", "redis answer")
    assert transcript.read_tail(str(path), "redis answer? no") == ("latest human prompt about redis", "redis answer")
    only_assistant = tmp_path / "no-human.jsonl"
    with open(only_assistant, "w") as fh:
        fh.write(json.dumps(user("far too far back")) + "\n")
        fh.truncate(1 << 36)
        fh.seek(1 << 36)
        fh.write("\n" + json.dumps(assistant("redis answer")) + "\n")
    assert transcript.read_tail(str(only_assistant), "now what") == ("", "redis answer")


def test_tail_read_looks_further_back_when_the_last_turns_are_long(tmp_path: Path) -> None:
    """The previous prompt sits behind 100 KB of tool output and a long answer: the first window
    misses it, a wider one finds it; a prompt beyond the last max_bytes is never read."""
    path = tmp_path / "t.jsonl"
    records = [user("the previous human prompt"), user([{"type": "tool_result", "content": "y" * 100_000}]),
               assistant("a long answer " * 3000), user("now what")]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    answer = ("a long answer " * 3000).strip()
    assert transcript.read_tail(str(path), "now what") == ("the previous human prompt", answer)
    assert transcript.read_tail(str(path), "now what", max_bytes=60_000) == ("", answer)


def test_conversation_keeps_only_human_prompts_and_assistant_text(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    records = [user("<command-name>/x</command-name>"), user("real prompt"), assistant("real answer"),
               user([{"type": "tool_result", "content": "tool"}])]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\nnot json\n")
    assert transcript.conversation(str(path)) == [("user", "real prompt"), ("assistant", "real answer")]


def test_what_claude_code_writes_in_the_assistants_place_is_not_the_assistant(tmp_path: Path) -> None:
    """An API error and the "No response requested." placeholder (model ``<synthetic>``) are not
    what the assistant said: capture never reads them as the conversation, nor the hook as context."""
    from testing.transcripts import Transcript

    t = Transcript("2b9c1f3e-1111-4c21-9d0a-3e4f5a6b7c8d", "/src/shop")
    t.user("Where do the staging logs go?")
    t.assistant("They go to the logs bucket in eu-west-1.")
    t.machine_turns()
    path = t.write(tmp_path)

    said = transcript.conversation(str(path))
    _previous, last = transcript.read_tail(str(path))

    assert ("assistant", "They go to the logs bucket in eu-west-1.") in said
    assert not any("No response requested" in text or "API Error" in text for _role, text in said)
    assert last == "They go to the logs bucket in eu-west-1."
