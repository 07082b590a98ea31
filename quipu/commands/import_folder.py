"""A folder of notes into the store in one bulk pass: the gates every note passes, one commit.

Contract:
- ``import_notes(store, found, source, project=None)`` takes notes as they are read (each
  recorded as of ``project`` when one is given, as ``--project`` does for every kind;
  ``quipu.store.notes``: a ``FolderNotes`` is counted first and read as iterated, here
  ``READ_BATCH`` notes before they are checked) and keeps of each only the file it becomes and its memory, parsed once
  (``Memory.create`` validated it, and what ``render_memory`` writes of it reads back as it: the
  file is not parsed again). A note that may not enter (``checked_note``: a bad field, a file too
  large or holding NUL, a secret in the file or in any field it is made from, each byte scanned
  once (``scanned.rendered_holds_secret``), named by rule and line, never shown) is skipped with
  its reason; one note never stops the rest. From ``CHILD_FROM`` notes on, the secret check runs
  in a second process (``quipu.store.secrets_child``) while the notes are read, and here while it
  is behind; a note it does not answer is checked here. The skipped and the existing notes are listed in the order read. The rest is one commit (``Store.commit``: one tree,
  its blobs in one pack), which does not scan again the bytes checked here
  (``quipu.store.scanned``). ``FolderImport.known`` maps each committed blob to its memory, so
  the index refresh writes the rows without parsing them again. From ``CHILD_FROM`` new notes
  on, a second process builds their meaning vectors while this one commits and the caller
  indexes (``FolderImport.vectors``, ``quipu.index.vectors_aside``): the caller waits for it
  before bringing the vectors up to the index, or closes it.
- A note HEAD's tree holds already, under its id or the id an earlier quipu gave it
  (``InHead.holds``), is listed as existing and not read further. A new version of a note
  (``notes.identity``: the first half of its id) supersedes the earlier versions still in force,
  none superseded (by an event or another version's ``supersedes``) or retracted (``InHead.earlier``;
  found in the one shard folder they share, each folder read once): an event file each
  (``supersede_events``, as ``quipu supersede`` writes them) in the import's commit, so ``quipu
  undo`` of it puts them back in force. ``FolderImport.updated`` lists each such note.
- Python's cycle collector is off during the pass (``quipu.index.rebuild.gc_paused``): it would walk every kept note
  again at each collection. Progress is drawn on a terminal's stderr only.
"""
from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from quipu.errors import FatalError, InvalidMemory
from quipu.index import index
from quipu.index.derive import RETRACTED, fold_events
from quipu.index.rebuild import gc_paused
from quipu.index.schema import text_fields
from quipu.output import Progress
from quipu.store import gitobj, notes, scanned, secrets_child, secrets_scan
from quipu.store.gitobj import object_id
from quipu.store.memory import Memory, check_file_bytes, memory_path, now_utc, parse_memory, render_memory
from quipu.store.store import Store, memory_fields
from quipu.store.trailers import cut_words, event_dir, trailer_stamp

if TYPE_CHECKING:
    from quipu.index import vectors_aside

READ_BATCH = 256  # notes read before they are checked
CHILD_FROM = 2048  # notes from which a second process checks them for secrets (``secrets_child``)


@dataclass(frozen=True)
class FolderImport:
    imported: list[Memory]
    existing: list[Memory]
    skipped: list[notes.Skipped]
    commit: str | None
    known: dict[str, Memory] = field(default_factory=dict)  # what was committed, by blob id
    vectors: vectors_aside.Aside | None = None  # the committed memories' vectors, being built
    # (path, new version, the versions it supersedes) of each edited note
    updated: list[tuple[str, Memory, tuple[str, ...]]] = field(default_factory=list)


def secret_reason(text: str, spans: list[secrets_scan.Secret]) -> str:
    """Why a note holding ``spans`` is left out: the rules and the first line, the secret masked."""
    kinds = ", ".join(sorted({s.kind for s in spans}))
    first = spans[0]
    start = text.rfind("\n", 0, first.start) + 1
    end = text.find("\n", first.start)
    end = len(text) if end < 0 else end
    line, at = "", start
    for span in (s for s in spans if s.start < end and s.end > start):
        line += text[at:max(span.start, start)] + f"[{span.kind}]"
        at = min(span.end, end)
    line = secrets_scan.redact(" ".join((line + text[at:end]).split()))
    if len(line) > 100:
        line = line[:97] + "..."
    return (f"it looks like it holds a secret ({kinds}), first on line {text.count(chr(10), 0, first.start) + 1}: "
            f"{line!r}; a secret in git history is there for good, so the note was not imported "
            "(remove the secret from it, keep the note out of the folder, or vouch for a look-alike with "
            "--allow-secret-like RULE)")


def note_refusal(note: notes.Note, allow: tuple[str, ...] = ()) -> str | None:
    """Why this note may not enter the store (None: it may), in words about the note itself."""
    return checked_note(note, allow)[0]


def checked_note(note: notes.Note, allow: tuple[str, ...] = ()) -> tuple[str | None, bytes, Memory | None]:
    """(why the note may not enter the store or None, the file it becomes, the memory that file
    reads back as: the note's own, since ``Memory.create`` validated it and what ``render_memory``
    writes of it reads back as it (``quipu.store.memory``) once its bytes pass the file checks)."""
    reason, data = _rendered(note)
    if reason:
        return reason, data, None
    # The exact bytes committed and each field a file is made from, each byte scanned once: the
    # commit does not scan what was found clean here again (``quipu.store.scanned``).
    if scanned.rendered_holds_secret(data, memory_fields(note.memory), allow, marker=True):
        return _secret_refusal(note, allow), data, None
    return None, data, note.memory


def _rendered(note: notes.Note) -> tuple[str | None, bytes]:
    """(why the file a note becomes may not be committed or None, that file)."""
    data = render_memory(note.memory)
    try:
        check_file_bytes(data, note.path)
    except InvalidMemory as exc:
        return str(exc).split("\n", 1)[0].removeprefix(f"{note.path}: "), data
    return None, data


def _secret_refusal(note: notes.Note, allow: tuple[str, ...]) -> str:
    spans = secrets_scan.find_secrets(note.text, allow, marker=True)
    if spans:
        return secret_reason(note.text, spans)
    for name, value in memory_fields(note.memory).items():  # a field read out of the note's frontmatter
        found = secrets_scan.find_secrets(value, allow, marker=True)
        if found:
            field = name.rsplit(" (", 1)[-1].rstrip(")")
            if field == "title" and value not in note.text:  # made from the file name
                return "its file name looks like a secret; the note was not imported (rename the file)"
            return f"its {field}: {secret_reason(value, found)}"
    return "what it would become looks like it holds a secret; the note was not imported"


def import_markdown(store: Store, root: Path, *, dry_run: bool = False,
                    allow_secret_like: tuple[str, ...] = (), project: str | None = None) -> FolderImport:
    """Every note under ``root`` not yet in the store, committed at once; a note that may not enter
    the store is skipped with its reason and never stops the rest."""
    if not root.is_dir():
        raise FatalError(f"{root} is not a folder\n- give the folder that holds the notes")
    found = notes.scan_folder(root)
    return import_notes(store, found, notes.printable_path(root.name), dry_run=dry_run,
                        allow_secret_like=allow_secret_like, project=project)


class InHead:
    """What HEAD's tree holds of the memories an import writes, each shard folder read once: a
    memory by its id, a note by the id an earlier quipu gave it, and the earlier versions of a note
    (``notes.identity``) still in force. Built again after each commit that should count."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.tree: gitobj.Tree | None = None
        self.libgit2 = False  # another object format: libgit2 reads the tree
        commit = store.head()
        if commit is not None:
            try:
                self.tree = gitobj.Tree(store.objects, store.objects.commit_tree(commit))
            except gitobj.Unsupported:
                self.libgit2 = True
        # shard -> (its ids, its versioned ids by their identity, its 16-hex ids by their first 12)
        self._shards: dict[str, tuple[set[str], dict[str, list[str]], dict[str, list[str]]]] = {}

    def _files(self, rel: str) -> list[str]:
        """The names of the files (not folders) in the folder ``rel`` of the tree."""
        if self.tree is not None:
            found = self.tree.folder(rel) or {}
            return [name for name, (mode, _) in found.items() if mode not in (gitobj.TREE_MODE, gitobj.GITLINK_MODE)]
        if not self.libgit2:
            return []
        try:
            folder = self.store.repo[self.store.head_tree()[rel].id]
        except KeyError:
            return []
        return [entry.name for entry in folder if entry.type_str == "blob"]  # type: ignore[attr-defined]

    def _data(self, rel: str) -> bytes | None:
        return self.tree.data(rel) if self.tree is not None else self.store.read_bytes(rel) if self.libgit2 else None

    def _shard(self, two: str) -> tuple[set[str], dict[str, list[str]], dict[str, list[str]]]:
        shard = self._shards.get(two)
        if shard is None:
            ids = {name[:-3] for name in self._files(f"memories/{two}") if name.endswith(".md")}
            versions: dict[str, list[str]] = {}
            former: dict[str, list[str]] = {}
            for mid in ids:
                key = notes.identity(mid)
                if key is not None:
                    versions.setdefault(key, []).append(mid)
                elif len(mid) == 16:
                    former.setdefault(mid[:notes.ID_HALF], []).append(mid)
            shard = self._shards[two] = (ids, versions, former)
        return shard

    def has(self, memory_id: str) -> bool:
        return memory_id in self._shard(memory_id[:2])[0]

    def holds(self, note: notes.Note) -> str | None:
        """The id under which the store holds this note already: its own, or the id an earlier
        quipu gave it; None when it holds neither."""
        mid = note.memory.id
        if self.has(mid):
            return mid
        if len(mid) != 2 * notes.ID_HALF or notes.identity(mid) is None:
            return None
        version = mid[notes.ID_HALF:]  # the first 12 of a former id's 16
        if not self._shard(version[:2])[2].get(version):
            return None
        former = notes.former_id(note.path, note.text)
        return former if self.has(former) else None

    def earlier(self, memory_id: str, keep: Collection[str] = ()) -> tuple[str, ...]:
        """The earlier versions of the note ``memory_id`` is a version of still in force (neither
        superseded, by an event or another version's ``supersedes``, nor retracted), but those in
        ``keep`` (versions the input still holds)."""
        key = notes.identity(memory_id)
        if key is None:
            return ()
        group = [m for m in self._shard(memory_id[:2])[1].get(key, ()) if m != memory_id and len(m) == len(memory_id)]
        if not group:
            return ()
        replaced: set[str] = set()
        for mid in group:
            data = self._data(memory_path(mid))
            try:
                replaced.update(parse_memory(data, memory_path(mid)).supersedes if data is not None else ())
            except InvalidMemory:
                continue  # a file the index lists as a problem supersedes nothing
        return tuple(sorted(m for m in group if m not in replaced and m not in keep and self._in_force(m)))

    def _in_force(self, memory_id: str) -> bool:
        """Whether no event in HEAD's tree supersedes or retracts ``memory_id`` (as the index folds them)."""
        folder = event_dir(memory_id)
        texts = [self._data(f"{folder}/{name}") or b"" for name in sorted(self._files(folder))]
        by, labels = fold_events(text.decode("utf-8", "replace") for text in texts)
        return by is None and RETRACTED not in labels


def supersede_events(new: str, earlier: Iterable[str]) -> dict[str, bytes | None]:
    """The event files marking each of ``earlier`` superseded by ``new`` (as ``quipu supersede``
    writes them), committed with ``new``: ``quipu undo`` of that commit takes them back."""
    out: dict[str, bytes | None] = {}
    for old in earlier:
        event = {"action": "supersede", "at": now_utc(), "by": new, "memory": old, "sweep": None,
                 "reason": "a newer version of the same note, imported"}
        out[f"{event_dir(old)}/{trailer_stamp()}-{os.urandom(3).hex()}.json"] = (
            json.dumps(event, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    return out


def add_version(store: Store, memory: Memory, earlier: Sequence[str], allow_secret_like: tuple[str, ...]) -> str:
    """Commit ``memory`` (``Store.add``), and when it is a new version of ``earlier``, the events
    that supersede them in the same commit."""
    if not earlier:
        return store.add(memory, action="import", allow_secret_like=allow_secret_like, marker=True)
    data = render_memory(memory)
    parse_memory(data, memory.path)  # the same validation a hand edit gets
    changes = {memory.path: data, **supersede_events(memory.id, earlier)}
    return store.commit(changes, f"quipu: import {memory.id} {cut_words(memory.title, 60)}",
                        {"Quipu-Action": "import", "Quipu-Memory": memory.id, "Quipu-Supersedes": ",".join(earlier)},
                        create_only=list(changes), require=[memory_path(old) for old in earlier],
                        allow_secret_like=allow_secret_like, fields=memory_fields(memory), marker=True)


def import_notes(store: Store, found: Iterable[notes.Note | notes.Skipped], source: str, *,
                 dry_run: bool = False, allow_secret_like: tuple[str, ...] = (),
                 project: str | None = None) -> FolderImport:
    with gc_paused():
        return _import_notes(store, _OfProject(found, project) if project else found, source, dry_run,
                             allow_secret_like)


class _OfProject:
    """``found`` with each note's memory of ``project`` (``--project``), counted as ``found`` is."""

    def __init__(self, found: Iterable[notes.Note | notes.Skipped], project: str) -> None:
        self.found, self.project = found, project

    def __len__(self) -> int:
        return len(self.found) if isinstance(self.found, Sized) else 0

    def __iter__(self) -> Iterator[notes.Note | notes.Skipped]:
        for item in self.found:
            yield item if isinstance(item, notes.Skipped) else notes.Note(
                item.path, item.text, item.memory.with_changes(project=self.project))


def _import_notes(store: Store, found: Iterable[notes.Note | notes.Skipped], source: str, dry_run: bool,
                  allow_secret_like: tuple[str, ...]) -> FolderImport:
    """Every note of ``found`` not yet in the store, through the same gates as a hand-written one,
    committed at once (the message names ``source``); what may not enter is skipped with its reason.
    One pass: each note is read, checked and rendered, and only its file and its parsed memory are
    kept; then one tree, one commit, and the index and the meaning vectors in one batch each."""
    fresh: dict[str, bytes] = {}
    parsed: dict[str, Memory] = {}
    existing: list[tuple[int, Memory]] = []
    skipped: list[tuple[int, notes.Skipped]] = []
    earlier_of: dict[str, tuple[str, ...]] = {}  # an edited note's id: the earlier versions in force
    updated: list[tuple[int, str, Memory, tuple[str, ...]]] = []  # (n, path, new version, what it supersedes)
    head = InHead(store)
    total = len(found) if isinstance(found, Sized) else 0
    shown = Progress(total, "Reading notes")
    # From CHILD_FROM notes on, a second process checks for secrets while this one reads on.
    child = secrets_child.ScanChild.start(allow_secret_like) if total >= CHILD_FROM else None
    # (n, note, file, handed to the child, the verdict found here or None), in the order read
    waiting: list[tuple[int, notes.Note, bytes, dict[str, str], bool, bool | None]] = []

    def decide(n: int, item: notes.Note, data: bytes, verdict: bool | None, fields: dict[str, str]) -> None:
        """The note in, or skipped with its reason; ``verdict``: the child's secret check, or None."""
        if item.memory.id in fresh:
            existing.append((n, item.memory))
            return
        memory: Memory | None = item.memory
        if verdict is None:
            reason, data, memory = checked_note(item, allow_secret_like)
        elif verdict:
            reason, memory = _secret_refusal(item, allow_secret_like), None
        else:
            reason = None
            scanned.remember_clean(data, fields, allow_secret_like)
        if reason or memory is None:
            skipped.append((n, notes.Skipped(item.path, reason or "it cannot be read")))
        else:
            fresh[item.memory.id] = data
            parsed[item.memory.id] = memory
            if item.memory.id in earlier_of:
                updated.append((n, item.path, memory, earlier_of[item.memory.id]))

    try:
        _read_all(found, child, decide, head, earlier_of, existing, skipped, waiting, shown)
    except BaseException:
        if child is not None:
            child.close()
        raise
    answers = iter(child.verdicts() if child else ())
    for n, item, data, fields, sent, here in waiting:  # a note the child did not answer (None) is checked here
        decide(n, item, data, next(answers) if sent else here, fields)
    shown.done()
    commit, aside = None, None
    if fresh and not dry_run:
        stage(f"Committing {len(fresh):,} notes...")
        if len(fresh) >= CHILD_FROM:
            aside = _vectors_aside(store, list(parsed.values()))
        changes: dict[str, bytes | None] = {parsed[mid].path: data for mid, data in fresh.items()}
        for _, _, memory, earlier in updated:
            changes.update(supersede_events(memory.id, earlier))
        try:
            commit = store.commit(
                changes, f"quipu: import {len(fresh)} notes from {secrets_scan.redact(source)}",
                {"Quipu-Action": "import", "Quipu-Memory": "store"}, create_only=list(changes),
                require=sorted({memory_path(old) for _, _, _, earlier in updated for old in earlier}),
                allow_secret_like=allow_secret_like, marker=True, fields=_Fields(parsed.values()),
            )
        except BaseException:
            if aside is not None:
                aside.close()
            raise
        finally:
            stage("")
    known = {object_id("blob", fresh[mid]): memory for mid, memory in parsed.items()} if commit else {}
    return FolderImport(list(parsed.values()), [m for _, m in sorted(existing, key=lambda e: e[0])],
                        [s for _, s in sorted(skipped, key=lambda e: e[0])], commit, known, aside,
                        [(path, m, earlier) for _, path, m, earlier in sorted(updated, key=lambda e: e[0])])


def _vectors_aside(store: Store, memories: Sequence[Memory]) -> vectors_aside.Aside | None:
    """The new memories' vectors started in a second process (None: built after the index)."""
    from quipu.index import vectors, vectors_aside

    try:
        where = index.index_file(store)
    except (FatalError, OSError):  # an unsafe cache folder: the index says so when it is written
        return None
    if not where.parent.is_dir():
        return None
    return vectors_aside.Aside.start(where.parent, where, ((m.id, vectors.memory_text(*text_fields(m)))
                                                           for m in memories), len(memories))


def _read_all(found: Iterable[notes.Note | notes.Skipped], child: secrets_child.ScanChild | None,
              decide: Callable[[int, notes.Note, bytes, bool | None, dict[str, str]], None],
              head: InHead, earlier_of: dict[str, tuple[str, ...]],
              existing: list[tuple[int, Memory]], skipped: list[tuple[int, notes.Skipped]],
              waiting: list[tuple[int, notes.Note, bytes, dict[str, str], bool, bool | None]],
              shown: Progress) -> None:
    """Read every note: decided at once, or (with a child) rendered and handed to the child. A
    batch of notes is read, then checked: each pass's code and tables stay in the processor's
    caches for a batch (one note read, then checked, costs each pass about a third more)."""
    items, n = iter(found), 0
    while batch := list(itertools.islice(items, READ_BATCH)):
        for item in batch:
            n += 1
            shown.update(n)
            if isinstance(item, notes.Skipped):
                skipped.append((n, item))
                continue
            held = head.holds(item)
            if held is not None:
                existing.append((n, item.memory if held == item.memory.id else item.memory.with_changes(id=held)))
                continue
            earlier = head.earlier(item.memory.id)
            if earlier:  # an edited note: its new version supersedes the one in force
                earlier_of[item.memory.id] = earlier
            if child is None:
                decide(n, item, b"", None, {})
            else:
                reason, data = _rendered(item)
                # A file that may not be committed is refused here, as it would be alone.
                fields = memory_fields(item.memory)
                here = None if reason else child.check(data, fields.values())
                waiting.append((n, item, data, fields, not reason and here is None, here))


class _Fields(Mapping[str, str]):
    """Every field the committed files were made from (``memory_fields``), made one memory at a
    time (the fields of 100,000 notes are never all held at once)."""

    def __init__(self, memories: Iterable[Memory]) -> None:
        self._memories = list(memories)

    def items(self) -> Iterator[tuple[str, str]]:  # type: ignore[override]
        for memory in self._memories:
            yield from memory_fields(memory).items()

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.items())

    def __len__(self) -> int:
        return sum(1 for _ in self.items())

    def __getitem__(self, name: str) -> str:
        return next(value for key, value in self.items() if key == name)


def stage(what: str) -> None:
    """The step a long import is at, on one line of a terminal's stderr (nothing otherwise)."""
    if sys.stderr.isatty():
        sys.stderr.write(f"\x1b[2K\r{what}")
        sys.stderr.flush()
