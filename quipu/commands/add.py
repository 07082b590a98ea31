"""`quipu add`: commit a new memory from arguments, stdin or $EDITOR."""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from typing import Any

from quipu import index
from quipu.commands._common import add_json, open_store
from quipu.errors import FatalError, InvalidMemory
from quipu.memory import CLASSES, ORIGINS, Memory, new_id, now_utc, parse_fields
from quipu.output import print_json

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
        description="Add a memory. The body comes from BODY, from stdin when BODY is '-' or stdin is "
        "not a terminal, or from $EDITOR when neither --title nor a body is given.",
    )
    p.add_argument("body", nargs="?", help="the memory's text ('-' reads stdin)")
    p.add_argument("-t", "--title", help="a short title (default: the body's first line)")
    p.add_argument("-d", "--description", default="", help="one line saying what the memory is for")
    p.add_argument("-c", "--class", dest="cls", default="project-note", choices=list(CLASSES), help="the kind of memory")
    p.add_argument("--topic", action="append", default=[], help="a topic (repeatable)")
    p.add_argument("--entity", action="append", default=[], help="a person, product, repo... (repeatable)")
    p.add_argument("--alias", action="append", default=[], help="words a person would type to find it (repeatable)")
    p.add_argument("--origin", default="user", choices=list(ORIGINS), help="who said it (default: user)")
    p.add_argument("--supersedes", action="append", default=[], metavar="ID", help="a memory this one replaces")
    p.add_argument("--half-life", type=float, metavar="DAYS", help="decay half-life in days (default: by class)")
    p.add_argument("--never-decays", action="store_true", help="this memory never loses weight with age")
    p.add_argument("--always-on", action="store_true", help="inject at every session start (rules)")
    p.add_argument("--project", help="the project root this memory is about")
    p.add_argument("--session", help="the Claude Code session it came from")
    p.add_argument("--id", dest="memory_id", help="a fixed id (default: random)")
    add_json(p)
    p.set_defaults(func=run)


def _from_editor() -> tuple[dict[str, Any], str]:
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
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMemory(
            f"the text on stdin is not UTF-8 (byte {exc.start:,} is {data[exc.start]:#04x}); nothing was added\n"
            "- convert it first, for example with `iconv -f LATIN1 -t UTF-8`"
        ) from None


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    body = args.body
    fields: dict[str, Any] = {}
    if body == "-" or (body is None and not sys.stdin.isatty()):
        body = _read_stdin()
    elif body is None and not args.title:
        fields, body = _from_editor()
    body = (body or "").strip("\n")
    title = args.title or fields.get("title") or (body.strip().split("\n", 1)[0][:80] if body.strip() else "")
    if not title:
        raise InvalidMemory("a memory needs a title or a body\n- pass --title or the memory's text")
    values: dict[str, object] = {
        "id": args.memory_id or new_id(),
        "title": title,
        "description": args.description or fields.get("description") or "",
        "class": fields.get("class") or args.cls,
        "topics": args.topic or fields.get("topics") or [],
        "entities": args.entity,
        "aliases": args.alias,
        "origin": args.origin,
        "created": now_utc(),
        "supersedes": args.supersedes,
        "always_on": args.always_on,
        "session": args.session,
        "project": args.project,
    }
    if args.never_decays:
        values["half_life_days"] = None
    elif args.half_life is not None:
        values["half_life_days"] = args.half_life
    memory = Memory.create(values, body + "\n" if body else "", source="new memory")
    sha = store.add(memory, session=args.session)
    index.refresh_after_write(store)
    if args.json:
        print_json({"id": memory.id, "commit": sha, "path": memory.path})
    else:
        print(f"Added {memory.id} ({memory.cls}): {memory.title}  [commit {sha[:12]}]")
    return 0
