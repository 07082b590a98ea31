"""A large import's secret check in a second process: the same verdict for every note as the
scanner in the importing process, and nothing let through when the child dies or is given what it
cannot read (what it did not answer is checked by the importer itself)."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from quipu.commands import import_folder
from quipu.store import notes, scanned, secrets_child
from quipu.store.memory import Memory, render_memory
from quipu.store.store import memory_fields
from testing.fixtures import make_store, quipu
from testing.secret_corpus import benign_cases, secret_cases


def _memories() -> list[Memory]:
    out = []
    for n, case in enumerate([*secret_cases(), *benign_cases()]):
        line = " ".join(case.text.split())[:200] or "x"
        values = {"id": f"{n:016x}", "class": "project-note", "origin": "import", "created": "2026-01-02"}
        for fields, body in (({"title": "Note"}, case.text + "\n"), ({"title": line}, "body\n")):
            try:
                out.append(Memory.create({**values, **fields}, body))
            except Exception:  # noqa: BLE001 - a title no note could have
                continue
    return out


def _here(memory: Memory) -> bool:
    scanned._CLEAN.clear()
    return scanned.rendered_holds_secret(render_memory(memory), memory_fields(memory), marker=True)


def _hand_over(child: secrets_child.ScanChild, memories: list[Memory]) -> list[bool | None]:
    """Each memory's verdict: found here while the child was behind, else the child's (None: unanswered)."""
    here = [child.check(render_memory(m), memory_fields(m).values()) for m in memories]
    answers = iter(child.verdicts())
    return [next(answers) if found is None else found for found in here]


def test_the_child_finds_what_the_scanner_here_finds() -> None:
    memories = _memories()
    child = secrets_child.ScanChild.start()
    assert child is not None
    verdicts = _hand_over(child, memories)
    assert verdicts == [_here(m) for m in memories]
    assert sum(map(bool, verdicts)) > len(memories) // 3


def test_a_child_killed_midway_answers_part_and_leaves_the_rest_to_be_checked_here() -> None:
    memories = _memories()
    child = secrets_child.ScanChild.start()
    assert child is not None
    here = [child.check(render_memory(m), memory_fields(m).values()) for m in memories[:200]]
    os.kill(child.pid, signal.SIGKILL)
    here += [child.check(render_memory(m), memory_fields(m).values()) for m in memories[200:]]  # a closed pipe
    answers = child.verdicts()
    assert len(answers) == sum(found is None for found in here)
    answered = [a for a in answers if a is not None]
    assert answers[len(answered):] == [None] * (len(answers) - len(answered))  # the child answers in order
    handed = iter(answers)
    expected = [_here(m) for m in memories]
    for found, should in zip(here, expected, strict=True):
        got = next(handed) if found is None else found
        assert got is None or got == should  # None: checked by the importer itself
    assert any(found is not None for found in here[200:]) or answers[-1] is None


def test_a_child_behind_leaves_the_notes_to_be_checked_by_the_reader() -> None:
    memories = _memories() * 20  # far more than the pipe holds at once
    child = secrets_child.ScanChild.start()
    assert child is not None
    here = [child.check(render_memory(m), memory_fields(m).values()) for m in memories]
    answers = iter(child.verdicts())
    verdicts = [next(answers) if found is None else found for found in here]
    assert verdicts == [_here(m) for m in memories]
    assert any(found is None for found in here)


def test_a_child_that_caught_up_is_handed_notes_again() -> None:
    """Once the child was behind (stopped here), the reader checks notes itself only until the
    child has taken what was waiting: then it hands the child notes again."""
    memories = _memories()
    child = secrets_child.ScanChild.start()
    assert child is not None
    os.kill(child.pid, signal.SIGSTOP)
    try:
        here: list[bool | None] = []
        while len(here) < 100_000 and (not here or here[-1] is None):  # until the reader checks one itself
            m = memories[len(here) % len(memories)]
            here.append(child.check(render_memory(m), memory_fields(m).values()))
        assert here[-1] is not None
    finally:
        os.kill(child.pid, signal.SIGCONT)
    behind = len(here)
    while len(here) < behind + 100_000 and here[-1] is not None:  # the child drains the pipe meanwhile
        m = memories[len(here) % len(memories)]
        here.append(child.check(render_memory(m), memory_fields(m).values()))
    assert here[-1] is None, "the reader never handed the child a note again"
    answers = iter(child.verdicts())
    verdicts = [next(answers) if found is None else found for found in here]
    expected = {n: _here(memories[n]) for n in {n % len(memories) for n in range(len(here))}}
    assert verdicts == [expected[n % len(memories)] for n in range(len(here))]


def test_a_large_import_skips_exactly_the_notes_the_scanner_refuses(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    secrets = [case.text for case in secret_cases()][:40]
    alike = [case.text for case in benign_cases()][:40]
    count = import_folder.CHILD_FROM + 50
    for n in range(count):
        text = f"# Note {n}\n\nordinary words about deploys, number {n}\n"
        if n % 50 == 7:
            text += "\n" + secrets[(n // 50) % len(secrets)] + "\n"
        elif n % 50 == 9:
            text += "\n" + alike[(n // 50) % len(alike)] + "\n"
        (folder / f"note-{n:05d}.md").write_text(text, encoding="utf-8")
    (folder / "latin1.md").write_bytes("# Caf\u00e9\n\nbody\n".encode("latin-1"))
    expected = {}
    for note in notes.scan_folder(folder):
        if isinstance(note, notes.Skipped):
            expected[note.path] = note.reason
        else:
            scanned._CLEAN.clear()
            reason = import_folder.note_refusal(note)
            if reason is not None:
                expected[note.path] = reason
    assert len(expected) > count // 50
    store = make_store(tmp_path / "store")
    done = quipu("--store", str(store.root), "import", "markdown", str(folder), "--json")
    assert done.returncode == 4, done.stderr
    report = json.loads(done.stdout)
    assert {s["path"]: s["reason"] for s in report["skipped"]} == expected
    assert [s["path"] for s in report["skipped"]] == sorted(expected)  # in the order the notes were read
    assert len(report["imported"]) == count + 1 - len(expected)


def test_an_import_that_stops_ends_its_child() -> None:
    child = secrets_child.ScanChild.start()
    assert child is not None
    child.check(b"# note\n", ["note"])
    child.close()
    try:
        os.kill(child.pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError("the child still runs after close()")
