"""`quipu add`: commit a new memory from arguments, stdin, a file or $EDITOR.

Text on stdin or in ``--file`` may be a memory document (YAML frontmatter and body, exactly what
a memory file holds): its fields are used, the flags given beside it win, and it is validated like
any write (a bad field gets the field's name and allowed values). A memory near-identical to an
active one (``quipu.index.near``) is refused, naming it, unless ``--force``; inside a project with
its own store, one of the per-user store too (the hook recalls both). So is one near-identical to a
retracted memory, with the command that brings that one back."""
from __future__ import annotations

import argparse
import functools
import os
import sys

from quipu.index import index
from quipu.prompt.inject import successors
from quipu.commands._common import add_allow_secret, add_json, add_project, amount, open_store
from quipu.capture import profile_remove
from quipu.errors import FatalError, InvalidMemory, NotFound, UsageError
from quipu.store.frontmatter import parse_fields
from quipu.store.memory import CLASSES, MAX_FILE_BYTES, ORIGINS, Memory, new_id, now_utc
from quipu.store.notes import memory_document
from quipu.output import print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from quipu.store.store import Store

_EDITOR_TEMPLATE = """---
title: ""
description: ""
class: project-note
topics: []
---
Write the memory here. Lines above are frontmatter; save and close to commit, or leave the title empty to cancel.
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "add",
        help="add a memory",
        description="Add a memory. The body comes from BODY, from --file, from stdin when BODY is '-' or "
        "stdin is not a terminal, or from $EDITOR when neither --title nor a body is given. Text from a file "
        "or stdin may be a whole memory document (YAML frontmatter, then the body); flags given beside it win.",
    )
    p.add_argument("body", nargs="?", help="the memory's text ('-' reads stdin)")
    p.add_argument("-f", "--file", metavar="NOTE.md", help="read the memory (a document with frontmatter, or plain text) from this file")
    p.add_argument("-t", "--title", help="a short title (default: the body's first line)")
    p.add_argument("-d", "--description", default="", help="one line saying what the memory is for")
    p.add_argument("-c", "--class", dest="cls", default="project-note", choices=list(CLASSES), help="the kind of memory")
    p.add_argument("--topic", action="append", default=[], help="a topic (repeatable)")
    p.add_argument("--entity", action="append", default=[], help="a person, product, repo... (repeatable)")
    p.add_argument("--alias", action="append", default=[], help="words a person would type to find it (repeatable)")
    p.add_argument("--origin", default="user", choices=list(ORIGINS), help="who said it (default: user)")
    p.add_argument("--supersedes", action="append", default=[], metavar="ID", help="a memory this one replaces "
                   "(recorded after the add as a decision of its own, the commit `quipu undo` takes back)")
    p.add_argument("--half-life", type=amount(0, 1_000_000), metavar="DAYS", help="decay half-life in days (default: by class)")
    p.add_argument("--never-decays", action="store_true", help="this memory never loses weight with age")
    p.add_argument("--always-on", action="store_true", help="inject at every session start (rules)")
    add_project(p, "this memory is")
    p.add_argument("--session", help="the Claude Code session it came from")
    p.add_argument("--id", dest="memory_id", help="a fixed id (default: random)")
    add_allow_secret(p)
    p.add_argument("--force", action="store_true", help="add it even when a near-identical memory exists")
    add_json(p)
    p.set_defaults(func=run)


def _from_editor() -> tuple[dict[str, Any], str]:
    from quipu import commands

    if commands.serving:  # an editor needs the terminal as its own: the `quipu` process runs this one
        raise commands.NeedsTerminal
    import shlex  # only for the editor: a plain `quipu add` does not pay for subprocess and tempfile
    import subprocess
    import tempfile

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        raise FatalError("no body given and no editor set\n- pass the text as an argument, pipe it on stdin, or set $EDITOR")
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False, encoding="utf-8") as fh:
        fh.write(_EDITOR_TEMPLATE)
        path = fh.name
    try:
        subprocess.run([*shlex.split(editor), path], check=True)
        with open(path, encoding="utf-8") as fh:
            fields, body = parse_fields(fh.read(), "the edited memory")
    except (OSError, UnicodeDecodeError, subprocess.CalledProcessError) as exc:
        raise FatalError(f"the editor failed: {exc}\n- check $EDITOR, or pass the text as an argument") from None
    finally:
        os.unlink(path)
    if not str(fields.get("title") or "").strip():
        raise FatalError("the title was left empty; nothing was added")
    return fields, body


def _read_stdin() -> str:
    return _decoded(sys.stdin.buffer.read(), "the text on stdin")


def _read_file(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise FatalError(f"cannot read {path}: {exc.strerror or exc}\n- check the path") from None
    return _decoded(data, path)


def _decoded(data: bytes, what: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise InvalidMemory(f"{what} is too long: a memory file may hold at most {MAX_FILE_BYTES:,} bytes; "
                            "nothing was added\n- split it into several smaller memories")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMemory(
            f"{what} is not UTF-8 (byte {exc.start:,} is {data[exc.start]:#04x}); nothing was added\n"
            "- convert it first, for example with `iconv -f LATIN1 -t UTF-8`"
        ) from None


def _not_replaced_already(store: Store, memory: Memory, given: bool) -> None:
    """Refuse ``supersedes`` naming a memory another one already replaces: the decision in force
    would win, and the new memory's claim would show nowhere."""
    if not memory.supersedes:
        return
    marks = ", ".join("?" * len(memory.supersedes))
    for old, by in index.rows(store, f"SELECT id, superseded_by FROM memories WHERE id IN ({marks})"
                              " AND superseded_by IS NOT NULL", memory.supersedes):
        head = index.query(store, functools.partial(successors, memory_id=old))[-1:] or [by]
        new = memory.id if given else "NEW_ID"
        raise FatalError(f"{old} is already superseded by {by}" + (f" (now by {head[0]})" if head[0] != by else "")
                         + f"; nothing was added\n- to replace {old} by this memory instead, add it without "
                         f"--supersedes {old}, then run `quipu supersede {old} {new}`\n- to replace the memory in "
                         f"force, pass --supersedes {head[0]}")


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    body = args.body
    fields: dict[str, Any] = {}
    if args.file:
        if body is not None:
            raise UsageError("give the text or --file, not both\n- drop one of them")
        fields, body = memory_document(_read_file(args.file), args.file)
    elif body == "-" or (body is None and not sys.stdin.isatty()):
        fields, body = memory_document(_read_stdin(), "the memory on stdin")
    elif body is None and not args.title:
        fields, body = _from_editor()
    body = (body or "").strip("\n")
    title = args.title or fields.get("title") or (body.strip().split("\n", 1)[0][:80] if body.strip() else "")
    if not title:
        raise InvalidMemory("a memory needs a title or a body\n- pass --title or the memory's text")
    values: dict[str, object] = {
        **fields,  # a memory document's own fields; Memory.create refuses any it does not know
        "id": args.memory_id or fields.get("id") or new_id(),
        "title": title,
        "description": args.description or fields.get("description") or "",
        "class": fields.get("class") or args.cls,
        "topics": args.topic or fields.get("topics") or [],
        "entities": args.entity or fields.get("entities") or [],
        "aliases": args.alias or fields.get("aliases") or [],
        "origin": fields.get("origin") or args.origin,
        "created": fields.get("created") or now_utc(),
        "supersedes": args.supersedes or fields.get("supersedes") or [],
        "always_on": args.always_on or fields.get("always_on", False),
        "session": args.session or fields.get("session"),
        "project": args.project or fields.get("project"),
    }
    if args.never_decays:
        values["half_life_days"] = None
    elif args.half_life is not None:
        values["half_life_days"] = args.half_life
    if fields.get("status") not in (None, "", "active"):
        raise InvalidMemory("field 'status': a new memory is active\n- supersede the old one with `quipu supersede` instead")
    memory = Memory.create(values, body + "\n" if body else "", source="new memory")
    with index.one_connection():  # the checks and the refresh open the index once
        _not_replaced_already(store, memory, bool(args.memory_id or fields.get("id")))
        if not args.force:
            from quipu.index import near

            from quipu.store.layers import read_together

            found = near.near_duplicate_in(read_together(store), memory.title, memory.body, retracted=True)
            if found is not None and found[1].status == "retracted":
                same = found[1]
                where = "" if found[0] is store else f"--store {found[0].root} "
                raise FatalError(f"a near-identical memory was retracted: {same.id} {same.title!r}; nothing was "
                                 f"added\n- to bring it back into recall: `quipu {where}undo --memory {same.id}`"
                                 "\n- to add this one anyway, pass --force")
            if found is not None and found[0] is store:
                same = found[1]
                raise FatalError(f"a near-identical memory exists: {same.id} {same.title!r}; nothing was added\n"
                                 f"- see it with `quipu show {same.id}`; to replace it, add yours and run "
                                 f"`quipu supersede {same.id} NEW_ID`\n- to add this one anyway, pass --force")
            if found is not None:  # inside a project with its own store: the hook recalls both
                same = found[1]
                raise FatalError(f"the per-user store holds a near-identical memory: {same.id} {same.title!r}; "
                                 f"nothing was added\n- it is recalled here already (`quipu show {same.id}`)\n"
                                 "- to keep a copy in this project's store anyway, pass --force")
        olds, memory = memory.supersedes, memory.with_changes(supersedes=())
        for old in olds:  # each a decision of its own, after the memory: one undo takes it back
            if not store.exists(old):
                raise NotFound(f"memory {memory.id} supersedes {old!r}, which is not in the store; nothing was "
                               "added\n- check the id with `quipu list`, or drop --supersedes")
        sha = store.add(memory, session=args.session, allow_secret_like=args.allow_secret_like, marker=True)
        decided = [(old, profile_remove.supersede(store, old, memory.id)[0]) for old in olds]
        index.refresh_after_write(store)
    if args.json:
        print_json({"id": memory.id, "commit": sha, "path": memory.path,
                    "superseded": [{"id": old, "commit": commit} for old, commit in decided]})
    else:
        print(f"Added {memory.id} ({memory.cls}): {memory.title}  [commit {sha[:12]}]")
        for old, commit in decided:
            print(f"{old} is now superseded by {memory.id}  [commit {commit[:12]}; undo with `quipu undo "
                  f"{commit[:12]}`]")
    return 0
