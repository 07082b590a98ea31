"""`quipu import memory-md FILE`: every entry of a Claude Code MEMORY.md becomes a store memory.
`quipu import markdown DIR`: every markdown note under a folder becomes one, all in one commit, in
one bulk pass (``quipu.commands.import_folder``; see ``quipu.store.notes`` for how a note is read);
what is skipped is reported with the reason. `quipu import claude-mem DB` and `quipu import
basic-memory DIR` (``quipu.commands.import_peers``) go through the same gates (``import_notes``)
and the same report (``report_folder``). The index is brought up to the commit and the meaning
vectors built in the same command, with the committed memories handed over rather than parsed again.

Contract:
- Each top-level list item of the index (typically ``- [Title](topic.md) — description``, or a
  plain bullet) is one memory with origin ``import``, committed on its own. When the entry links a
  topic file beside the index, that file's text is the body and its frontmatter ``class`` (one of
  quipu's), else ``type``, picks the class (user -> preference, feedback -> rule, project ->
  project-note, reference -> reference);
  otherwise the entry's own text is the body and a section heading named after one of those types
  picks it. The section heading becomes a topic. An entry's indented continuation lines stay in
  its body.
- A topic file is read as ``import markdown`` reads a note (``notes.read_document``): one that is
  too large, missing, unreadable, not UTF-8, empty or a link skips its entry with that reason. A
  link that leads outside the index's folder (``memorymd.topic_link``: an absolute path, ``..``, a
  symbolic link that resolves outside), whatever file it names, is not followed: the file is not
  read, and the entry is skipped and listed with the link (``topic_file`` in ``--json``); no
  memory is made of its line alone. A URL, or a file in the folder that is no ``.md`` file (an
  image), links nothing: the entry's own text is the body.
- An entry's id is ``mm-``, 12 hex of its key (the topic file it links, else its title) and 12 hex
  of its title and body, so importing the same file again adds nothing (``exists``; so does an
  entry a store holds under the id an earlier quipu gave it, ``mm-`` and 16 hex of title and
  body). An entry whose text changed is a new memory that supersedes the versions of the same key
  still in force (``InHead.earlier``) that the file no longer holds: the supersede events are in
  its own commit (``add_version``), so ``quipu undo`` of that commit puts them back in force and
  keeps the new memory, retracted. A markdown note is matched with its earlier versions the same
  way, by its path (``quipu.store.notes``), the events in the folder's one commit.
- Entries past Claude Code's load cut are flagged, since those are the ones no session saw.
- One note or entry never stops an import. A note that may not enter the store (it looks like it
  holds a secret, is too large, unreadable, not UTF-8, empty, a link...) is skipped and listed by
  its path in the folder (an entry: by the MEMORY.md and line, or its topic file) with the
  reason; a secret is named by its rule and line, never shown. The same list is in the normal
  output, ``--dry-run`` and ``--json``; the rest is imported (a folder in one commit), and the
  exit code is ``EXIT_SOME_SKIPPED`` (4) when anything was skipped (the output says when that was
  everything). Input holding nothing to import (a folder without a ``*.md`` or ``*.markdown``
  note, a MEMORY.md without an entry, a database without a row) is a ``FatalError`` (1), dry run
  or not.
"""
from __future__ import annotations

import argparse
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quipu.index import index
from quipu.index.rebuild import gc_paused
from quipu.claude import memorymd
from quipu.store import notes, secrets_scan
from quipu.commands._common import add_allow_secret, add_json, add_project, open_store
from quipu.errors import EXIT_SOME_SKIPPED, FatalError, InvalidMemory
from quipu.store.memory import CLASSES, Memory, render_memory
from quipu.output import print_json
from quipu.store.store import Store
from quipu.commands.import_folder import FolderImport, InHead, add_version, import_markdown, secret_reason, stage
from quipu.lite import NamedTuple

if TYPE_CHECKING:
    from quipu.index import vectors_aside

TYPE_CLASSES = {"user": "preference", "feedback": "rule", "project": "project-note", "reference": "reference"}
_SECTION_WORDS = {**TYPE_CLASSES, "users": "preference", "projects": "project-note", "references": "reference"}


@dataclass(frozen=True)
class Outcome:
    line: int
    memory: Memory
    status: str  # "imported", "exists", or "new" (dry run)
    past_cut: bool
    topic_file: str | None
    commit: str | None = None
    supersedes: tuple[str, ...] = ()  # the earlier versions this one replaces

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "id": self.memory.id,
            "title": self.memory.title,
            "class": self.memory.cls,
            "status": self.status,
            "past_cut": self.past_cut,
            "topic_file": notes.printable_path(self.topic_file) if self.topic_file else None,
            "supersedes": list(self.supersedes),
            "commit": self.commit,
        }


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "import",
        help="import memories from another format (Claude Code's MEMORY.md, markdown notes, claude-mem, basic-memory)",
        description="memory-md FILE: turn each entry of a Claude Code MEMORY.md (and the topic file it links) "
        "into a store memory, one commit each, so entries past Claude Code's 200-line / 25,000-byte load cut are "
        "recalled too; when FILE is the auto-memory of the project quipu runs in, its project notes are that "
        "project's. markdown DIR: turn every markdown note under DIR (with or without frontmatter) into a "
        "memory, all in one commit. claude-mem DB: each observation and session summary of claude-mem's SQLite "
        "database (read only) becomes a memory, its concepts topics. basic-memory DIR: each note of a basic-memory "
        "project becomes a memory, its tags and the #tags of its observations topics. A note's frontmatter class "
        "is kept when it is one of the store's classes. A note that may not enter the store (it looks like it holds "
        "a secret, is too large, unreadable, not UTF-8, empty, a link; for memory-md, a topic file that is any of "
        "these) is skipped and listed by its path with the reason, in the normal output, --dry-run and --json "
        "alike, and the rest is imported. For memory-md, a link that leads outside FILE's folder (an absolute "
        "path, .., a symbolic link out) is never followed: the file is not read, and its entry is skipped and "
        "listed with the link (no memory is made of the entry's line alone). Importing the same input again adds "
        "nothing. A note (by its path in DIR) or an entry (by the topic file it links, else its title) whose text "
        "changed since it was imported becomes a new memory that supersedes its earlier version; nothing is "
        "deleted, and `quipu undo` of the import puts the earlier version back in force (the new one is kept, "
        "retracted).",
        epilog="Exit codes: 0 everything was imported (or already in the store); 4 some notes were skipped (each "
        "is listed; the rest was imported, and the output says when nothing was); 1 nothing was imported, for "
        "instance the input holds no note or entry at all (the message says why).",
    )
    p.add_argument("kind", choices=("memory-md", "markdown", "claude-mem", "basic-memory"), help="the format to import")
    p.add_argument("file", help="the MEMORY.md to import (topic files are read from its folder), the folder of "
                   "notes, claude-mem's database (~/.claude-mem/claude-mem.db) or a basic-memory project folder")
    add_project(p, "every imported memory is")
    p.add_argument("--dry-run", action="store_true", help="show what would be imported and commit nothing")
    add_allow_secret(p)
    add_json(p)
    p.set_defaults(func=run)


class Made(NamedTuple):
    """What an entry becomes: its memory, the topic file it read (if any), and the id an earlier
    quipu gave the same entry."""

    memory: Memory
    topic: str | None
    former: str


def _read_topic(base: Path, link: str | None, where: str) -> tuple[dict[str, Any], str, float, Path] | notes.Skipped | None:
    """The topic file an entry links: (fields, body, mtime, its path); Skipped when the link leads
    outside the folder (as the entry, ``where``, with the link: the file is not read) or the file
    cannot be a note (as the file, with ``notes.read_document``'s reasons); None: the entry links
    no topic file."""
    found = memorymd.topic_link(str(base), link)
    if found is not None and found.outside:
        shown = notes.printable_path(found.target)
        return notes.Skipped(where, f"its link {shown} leaves the folder of the MEMORY.md ({found.outside}): that "
                             "topic file was not read, and the entry was not imported (links leaving the folder "
                             "are not followed)", shown)
    if found is None or not found.target.lower().endswith(".md"):
        return None
    full, rel = found.path, os.path.relpath(found.path, base)
    if os.path.realpath(os.path.dirname(full)) != os.path.join(os.path.realpath(base), os.path.dirname(rel)).rstrip(os.sep):
        return notes.Skipped(notes.printable_path(full), "in a folder reached through a link (links are not followed)")
    read = notes.read_document(full, notes.printable_path(full))
    if isinstance(read, notes.Skipped):
        return read
    fields, body, mtime = read
    return fields, body, mtime, Path(full)


def _class(fields: dict[str, Any], section: str) -> str:
    if isinstance(fields.get("class"), str) and fields["class"] in CLASSES:  # quipu's own field, as `import markdown` keeps it
        return str(fields["class"])
    kind = fields.get("type")
    if isinstance(kind, str) and kind.strip().lower() in TYPE_CLASSES:
        return TYPE_CLASSES[kind.strip().lower()]
    words = {w for w in "".join(c if c.isalpha() else " " for c in section.lower()).split() if w in _SECTION_WORDS}
    if len(words) == 1:
        return _SECTION_WORDS[words.pop()]
    return "project-note"


def entry_ids(key: str, title: str, body: str) -> tuple[str, str]:
    """(an entry's id, the id an earlier quipu gave it): ``mm-``, 12 hex of its key (the topic file
    it links, else its title) and 12 of its title and body; ``mm-`` and 16 of title and body."""
    digest = hashlib.sha256(f"{title}\n\n{body}".encode()).hexdigest()
    return f"mm-{hashlib.sha256(key.encode()).hexdigest()[:notes.ID_HALF]}{digest[:notes.ID_HALF]}", f"mm-{digest[:16]}"


def to_memory(entry: memorymd.Entry, index_path: Path, project: str | None = None,
              its_project: str | None = None) -> Made | notes.Skipped:
    """What an entry becomes (Skipped, when its topic file cannot be read): of ``project`` whatever
    its class, else of ``its_project`` (the project whose auto-memory the index is) when it is a
    project note."""
    base, where = index_path.parent, f"{notes.printable_path(str(index_path))}:{entry.line}"
    topic = _read_topic(base, entry.link, where)
    if isinstance(topic, notes.Skipped):
        return topic
    fields, body, mtime, source = topic if topic else ({}, "", None, index_path)
    if not body:
        body = entry.text
    elif "\n" in entry.text:  # the entry's own continuation lines are kept beside the topic file's text
        body += "\n\n" + entry.text.split("\n", 1)[1].strip("\n")
    description = entry.description
    if not description and isinstance(fields.get("description"), str):
        description = memorymd.clip(fields["description"], memorymd.FIELD_CHARS)
    title = entry.title
    key = notes.printable_path(source.relative_to(base).as_posix()) if topic else title
    memory_id, former = entry_ids(key, title, body)
    section = memorymd.clip(entry.section, 80)
    values: dict[str, Any] = {
        "id": memory_id,
        "title": title,
        "description": description if description != title else "",
        "class": _class(fields, entry.section),
        "topics": [section] if section else [],
        "origin": "import",
        "created": notes.created_of(fields, source, mtime),
        "project": project or (its_project if _class(fields, entry.section) == "project-note" else None),
    }
    memory = Memory.create(values, body + "\n", source=where)
    return Made(memory, str(source) if topic else None, former)


def _entry_refusal(memory: Memory, entry: memorymd.Entry, index_text: str, topic: str | None,
                   allow: tuple[str, ...] = ()) -> str | None:
    """Why an entry's memory may not enter the store: a secret, located in the file it came from."""
    if not secrets_scan.find_secrets(render_memory(memory).decode("utf-8", "replace"), allow, marker=True):
        return None
    if topic is not None:
        text = Path(topic).read_bytes().decode("utf-8", "replace")
        spans = secrets_scan.find_secrets(text, allow, marker=True)
    else:
        text = index_text
        lines = text.splitlines(keepends=True)
        first, last = sum(map(len, lines[:entry.line - 1])), sum(map(len, lines[:entry.end_line]))
        spans = [s for s in secrets_scan.find_secrets(text, allow, marker=True) if s.start < last and s.end > first]
    if not spans:
        return "what it would become looks like it holds a secret; the entry was not imported"
    return secret_reason(text, spans).replace("the note was not", "the entry was not")


def import_memory_md(
    store: Store, path: Path, *, dry_run: bool = False, project: str | None = None,
    allow_secret_like: tuple[str, ...] = (), its_project: str | None = None,
) -> tuple[list[Outcome], list[memorymd.Line], list[notes.Skipped]]:
    """Every entry of the MEMORY.md at ``path``, one commit each; an entry that may not enter the
    store is skipped (named by the file it came from and its line) and never stops the rest.
    ``project`` is recorded on every entry, ``its_project`` on the project notes (``to_memory``)."""
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        raise FatalError(f"cannot read {path}: {exc}\n- check the path") from None
    entries, others = memorymd.parse_entries(text)
    if not entries:
        raise FatalError(f"no entry in {path}: nothing was imported\n- check the path: a MEMORY.md lists each "
                         "memory as a list item, `- [Title](topic.md) — description` or `- the note itself`")
    cut = {line.number for line in memorymd.measure(text, str(path)).cut}
    made: list[tuple[memorymd.Entry, Made]] = []
    skipped: list[notes.Skipped] = []
    for entry in entries:
        where = f"{notes.printable_path(str(path))}:{entry.line}"
        try:
            got = to_memory(entry, path, project, its_project)
            if isinstance(got, notes.Skipped):
                skipped.append(got)
                continue
            reason = _entry_refusal(got.memory, entry, text, got.topic, allow_secret_like)
        except InvalidMemory as exc:
            skipped.append(notes.Skipped(where, str(exc).split("\n", 1)[0].removeprefix(f"{where}: ")))
            continue
        if reason:
            skipped.append(notes.Skipped(notes.printable_path(got.topic or where), reason))
        else:
            made.append((entry, got))
    current = {got.memory.id for _, got in made}  # versions the file holds: none of them is superseded
    outcomes: list[Outcome] = []
    seen: set[str] = set()
    head = InHead(store)
    for entry, got in made:
        memory, past = got.memory, entry.line in cut
        held = memory if memory.id in seen or head.has(memory.id) else \
            memory.with_changes(id=got.former) if head.has(got.former) else None  # under an earlier quipu's id
        if held is not None:
            outcomes.append(Outcome(entry.line, held, "exists", past, got.topic))
            seen.add(memory.id)
            continue
        earlier = head.earlier(memory.id, current)
        if dry_run:
            outcomes.append(Outcome(entry.line, memory, "new", past, got.topic, None, earlier))
        else:
            sha = add_version(store, memory, earlier, allow_secret_like)
            outcomes.append(Outcome(entry.line, memory, "imported", past, got.topic, sha, earlier))
            head = InHead(store)
        seen.add(memory.id)
    return outcomes, others, skipped


def _index_and_vectors(store: Store, known: dict[str, Memory] | None = None,
                       aside: vectors_aside.Aside | None = None) -> None:
    """The index brought up to the import's commit, and the meaning vectors built in the same
    command (a batch at a time, or by ``aside`` meanwhile), so the first search after an import is
    no slower than any other."""
    stage("Updating the index...")
    try:
        fresh = index.refresh_after_write(store, known)
    except BaseException:
        if aside is not None:
            aside.close()
        raise
    if not fresh:
        if aside is not None:
            aside.close()
        return
    from quipu.index import vectors

    stage("Building the meaning vectors...")
    if aside is not None:
        aside.wait()
    cache = index.index_file(store).parent
    found = index.query(store, lambda db: vectors.ensure_vectors(cache, db))
    if found is not None:
        _ = found.matrix  # the flat file a search reads, written now rather than by the first search
        vectors.encoder(cache)  # and the tokenizer's SQLite copy a query is split with
    stage("")


def _run_markdown(store: Store, args: argparse.Namespace) -> int:
    root = Path(args.file).expanduser().absolute()
    done = import_markdown(store, root, dry_run=args.dry_run, allow_secret_like=tuple(args.allow_secret_like),
                           project=args.project)
    return report_folder(store, done, root, args)


def report_folder(store: Store, done: FolderImport, root: Path, args: argparse.Namespace,
                  what: str = "note(s)") -> int:
    """Index what was committed and print the import's summary (or its JSON); the exit code."""
    if not (done.imported or done.existing or done.skipped):
        raise FatalError(_NOTHING_IN.get(args.kind, _NOTHING_IN["markdown"]).format(root))
    if done.commit:
        with gc_paused():
            _index_and_vectors(store, done.known, done.vectors)
    code = EXIT_SOME_SKIPPED if done.skipped else 0
    if args.json:
        print_json({
            "folder": str(root), "dry_run": args.dry_run, "commit": done.commit,
            "imported": [m.id for m in done.imported], "already_in_the_store": [m.id for m in done.existing],
            "skipped": [{"path": s.path, "reason": s.reason} for s in done.skipped],
            "updated": [{"path": path, "id": m.id, "supersedes": list(old)} for path, m, old in done.updated],
        })
        return code
    verb = "Would import" if args.dry_run else "Imported"
    where = f" in commit {done.commit[:12]}" if done.commit else ""
    if done.updated:
        where += f" ({len(done.updated)} {'would supersede' if args.dry_run else 'superseding'} an earlier version)"
    print(f"{verb} {len(done.imported)} {what} from {root}{where}; {len(done.existing)} already in the store, "
          f"{len(done.skipped)} skipped.")
    if not (done.imported or done.existing):
        print(f"Nothing {'would be' if args.dry_run else 'was'} imported: all {len(done.skipped)} were skipped, each "
              "for the reason listed.")
    for path, memory, earlier in done.updated:
        print(f"  updated {path}: {memory.id} supersedes {', '.join(earlier)} (its earlier version)")
    for item in done.skipped:
        print(f"  skipped {item.path}: {item.reason}")
    if done.imported and not args.dry_run:
        print("Notes hold only their author's words: `quipu sweep` asks the model for the words a person would "
              "type to find them (docs/schedule.md).")
    return code


_NOTHING_IN = {
    "markdown": "no note under {}: it holds no *.md or *.markdown file (hidden folders are not read); nothing was "
                "imported\n- check the path: give the folder that holds the notes",
    "basic-memory": "no note under {}: it holds no *.md or *.markdown file; nothing was imported\n- check the path: "
                    "give the basic-memory project's folder (~/basic-memory by default)",
    "claude-mem": "no observation or session summary in {}: nothing was imported\n- check the path: give "
                  "claude-mem's database, usually ~/.claude-mem/claude-mem.db",
}


def _auto_memory_project(store: Store, path: Path) -> str | None:
    """The project whose Claude Code auto-memory index ``path`` is, when it is the one of the
    project quipu runs in (its project notes are that project's); None otherwise, or in that
    project's own store (``locate.project_field``)."""
    from quipu.prompt import locate

    here = os.getcwd()
    try:
        if path.resolve() != memorymd.auto_memory_index(here).resolve():
            return None
    except OSError:
        return None
    return locate.project_field(str(store.root.absolute()), memorymd.project_root(here))


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.kind == "markdown":
        return _run_markdown(store, args)
    if args.kind in ("claude-mem", "basic-memory"):
        from quipu.commands.import_peers import run_peer

        return run_peer(store, args)
    path = Path(args.file).expanduser().absolute()
    its_project = None if args.project else _auto_memory_project(store, path)
    outcomes, others, skipped = import_memory_md(store, path, dry_run=args.dry_run, project=args.project,
                                                 allow_secret_like=tuple(args.allow_secret_like),
                                                 its_project=its_project)
    if not args.dry_run and any(o.status == "imported" for o in outcomes):
        _index_and_vectors(store)
    code = EXIT_SOME_SKIPPED if skipped else 0
    if args.json:
        print_json(
            {
                "file": str(path),
                "dry_run": args.dry_run,
                "project_notes_of": its_project,
                "entries": [o.to_json() for o in outcomes],
                "not_imported": [{"line": x.number, "text": x.text} for x in others],
                "skipped": [{"path": s.path, "reason": s.reason, **({"topic_file": s.link} if s.link else {})}
                            for s in skipped],
            }
        )
        return code
    marks = {"imported": "+", "new": "+", "exists": "="}
    for o in outcomes:
        note = ", past the load cut" if o.past_cut else ""
        state = "" if o.status != "exists" else " (already in the store)"
        if o.supersedes:
            state = f"; supersedes {', '.join(o.supersedes)} (its earlier version)"
        print(f"{marks[o.status]} {o.memory.id}  {o.memory.cls:<12} {o.memory.title[:60]}  (line {o.line}{note}){state}")
    fresh = [o for o in outcomes if o.status != "exists"]
    verb = "Would import" if args.dry_run else "Imported"
    updated = sum(1 for o in fresh if o.supersedes)
    print(
        f"{verb} {len(fresh)} of {len(outcomes) + len(skipped)} entries from {path} "
        f"({len(outcomes) - len(fresh)} already in the store, {len(skipped)} skipped"
        f"{f', {updated} superseding an earlier version' if updated else ''}); "
        f"{sum(o.past_cut for o in fresh)} of them were past Claude Code's load cut."
    )
    if not outcomes:
        print(f"Nothing {'would be' if args.dry_run else 'was'} imported: all {len(skipped)} were skipped, each "
              "for the reason listed.")
    if its_project:
        print(f"This is the auto-memory of the project at {its_project}: its project notes are recorded as of it "
              "(--project records one project on every entry).")
    for item in skipped:
        print(f"  skipped {item.path}: {item.reason}")
    if others:
        numbers = ", ".join(str(x.number) for x in others[:20]) + (" ..." if len(others) > 20 else "")
        print(f"Not list entries, so not imported: line(s) {numbers}")
    return code
