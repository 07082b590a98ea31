"""A person copies a draft where Claude Code loads skills, or takes it back out.

Contract:
- ``promote(store, name, where)`` copies ``skills/drafts/<name>/SKILL.md`` to
  ``<where>/<name>/SKILL.md`` (``where`` is ``<project>/.claude/skills`` or
  ``~/.claude/skills``) and commits an event naming who promoted it, where, and the file's hash.
  It refuses inside Claude Code or a model child (``CLAUDECODE``, ``QUIPU_CHILD``: promotion is a
  person's act), when the target exists (it would shadow a skill), when a folder on the way is a
  symbolic link, and when the draft as it is now in the store (a store is shared and untrusted)
  holds anything Claude Code acts on as it loads a skill (a shell command, an ``@path`` include,
  a frontmatter field beyond a name and a description: ``gate.check_loading``) or fails the name,
  length, claims or safety check.
- ``demote(store, name)`` removes the file it copied (only if unchanged since: an edited skill is
  the person's, and is left with a message) and commits the event. The draft stays in the store.
"""
from __future__ import annotations

import getpass
import hashlib
import os
from pathlib import Path
from typing import NamedTuple

from quipu.errors import ConflictError, FatalError, NotFound
from quipu.skills import gate, queue
from quipu.store.store import Store

AGENT_ENV = ("CLAUDECODE", "QUIPU_CHILD")


class Promotion(NamedTuple):
    name: str
    path: Path
    commit: str


def who() -> str:
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = "unknown"
    return user


def require_person() -> None:
    running = [v for v in AGENT_ENV if os.environ.get(v)]
    if running:
        raise FatalError(f"skills are promoted and demoted only by a person ({running[0]} is set: this runs inside "
                         "Claude Code or a model)\n- run the command yourself, in your own terminal")


def _no_links(path: Path, stop: Path) -> None:
    for p in [path, *path.parents]:
        if p.is_symlink():
            raise ConflictError(f"{p} is a symbolic link; quipu never writes through one\n- replace it with a folder")
        if p == stop:
            return


def _check_name(name: str) -> None:
    if not gate.NAME.match(name) or len(name) > gate.MAX_NAME:
        raise NotFound(f"{name!r} is not a skill name\n- run `quipu skills list` to see the drafts")


def _loadable(target: Path, name: str) -> bool:
    """A path ``promote`` can have written: ``<.claude or the Claude folder>/skills/<name>/SKILL.md``.
    The store is untrusted input, so ``demote`` removes nothing else whatever an event says."""
    from quipu.claude.settings import claude_dir

    skills = target.parent.parent
    return (target.is_absolute() and target.name == "SKILL.md" and target.parent.name == name
            and skills.name == "skills" and (skills.parent.name == ".claude" or skills == claude_dir() / "skills"))


def recheck(name: str, text: str) -> list[str]:
    """The content checks again, on the SKILL.md as the store holds it now: what Claude Code would
    do as it loads it (``gate.check_loading``), then the name, length, claims and safety."""
    parts = gate.split_skill_md(text)
    if parts is None:
        return ["the draft has no frontmatter"]
    fields = dict(parts[0])
    problems = [r for r in (gate.check_loading(text),) if r]
    if fields.get("name") != name:
        problems.append(f"the draft's frontmatter names {fields.get('name')!r}, not {name!r}")
    description = gate.yaml_value(fields.get("description", "")) or ""
    draft = gate.Draft(name, description, "-", parts[1])
    problems += [r for r in (gate.check_length(draft), gate.check_claims(draft), gate.check_safety(draft)) if r]
    return problems


def promote(store: Store, name: str, where: Path) -> Promotion:
    require_person()
    _check_name(name)
    text = queue.draft_text(store, name)
    if text is None:
        raise NotFound(f"no skill draft {name!r}\n- run `quipu skills list` to see the drafts")
    refusal = gate.check_name(gate.Draft(name, "-", "-", "-"), gate.Context(existing_skills=gate.existing_skill_names(
        [where.parent.parent] if where.parent.name == ".claude" else [])))
    target = where / name / "SKILL.md"
    if target.parent.exists() or target.parent.is_symlink():
        raise ConflictError(f"{target.parent} exists already: promoting would shadow that skill\n"
                            "- demote or rename the existing skill first")
    if refusal:
        raise ConflictError(f"{refusal}\n- rename the draft's folder, or leave it unpromoted")
    problems = recheck(name, text.decode("utf-8", "replace"))
    if problems:
        raise ConflictError(f"draft {name!r} no longer passes the gate: {'; '.join(problems)}\n"
                            "- fix the draft in the store (a commit), or leave it unpromoted")
    _no_links(where, where.parent.parent)
    target.parent.mkdir(parents=True)
    target.write_bytes(text)
    digest = _digest(text)
    commit = queue.write_event(store, name, "promote", {"by": who(), "where": str(target), "sha256": digest,
                                                        "time": queue.now()})
    return Promotion(name, target, commit)


def _digest(text: bytes) -> str:
    """The promoted file's digest as the event records it: ``sha256:`` and hex (a bare 64-digit hex
    string is what the secret scan refuses to commit)."""
    return "sha256:" + hashlib.sha256(text).hexdigest()


def demote(store: Store, name: str) -> Promotion:
    require_person()
    _check_name(name)
    event = queue.last_event(store, name)
    if event.get("action") != "promote":
        raise NotFound(f"skill {name!r} is not promoted\n- run `quipu skills list` to see what is")
    target = Path(str(event.get("where", "")))
    if not _loadable(target, name):
        raise ConflictError(f"the store's promotion record names {target}, not a skill folder quipu writes\n"
                            "- remove the skill yourself")
    if target.is_symlink():
        raise ConflictError(f"{target} is a symbolic link; quipu never follows one\n- remove it yourself")
    if target.exists():
        if _digest(target.read_bytes()) != event.get("sha256"):
            raise ConflictError(f"{target} was edited since it was promoted, so it is yours now\n"
                                "- remove it yourself, or restore the promoted text and demote again")
        target.unlink()
        try:
            target.parent.rmdir()
        except OSError:
            pass  # the person keeps other files there
    commit = queue.write_event(store, name, "demote", {"by": who(), "where": str(target), "time": queue.now()})
    return Promotion(name, target, commit)
