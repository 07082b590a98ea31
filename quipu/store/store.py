"""The store: memories as files in a git repository of their own, every mutation a commit.

Contract:
- A store is a git repository with a ``quipu.toml`` at its root, created by ``Store.init`` from
  the template. Memory bodies live in ``memories/<shard>/<id>.md``.
- Mutable state (labels, supersession) never edits a memory file: each decision is a new,
  uniquely named event file ``events/<shard>/<id>/<utc stamp>-<random>.json``. Undoing any one
  commit therefore removes or restores only its own files and can never conflict with later
  decisions about the same memory (see docs/design.md).
- Every mutation is exactly one commit carrying ``Quipu-Action`` and exactly one ``Quipu-Memory``
  trailer (plus ``Quipu-Supersedes``, ``Quipu-Sweep``, ``Quipu-Session``, ``Quipu-Label`` where
  they apply), so ``git log`` is the audit log.
- No command deletes a memory (``quipu.store.undo`` never reverts a memory's creation); ``retract``
  takes one out of recall and search with a ``retracted`` label, an event like any other, kept in
  history and undone like any decision.
- ``supersede`` of a pair whose supersession is in force writes nothing and returns that
  decision's commit (``supersession``). A memory that is not there: ``missing`` (``layers``).
- ``commit`` writes only paths of the store's schema (``quipu.store.schema``): everything quipu
  writes is something a clone and a sync take.
- A ``Store`` may be used from several threads: each opens its own git repository (``repo``) and
  object reader (``objects``); ``landed`` is the last write of the calling thread.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from _thread import _local as thread_local  # threading.local itself, without the threading module
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from quipu.errors import ConflictError, InvalidMemory, NoStore, NotFound
from quipu.prompt import locate
from quipu.store.safepath import LINK_MODE  # a committed symlink is never read as a memory
from quipu.store.memory import Memory, check_id, memory_path, parse_memory, render_memory
from quipu.store.trailers import LogEntry, cut_words, event_dir, format_message, trailer_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import pygit2

    from quipu.store import gitobj
    from quipu.store.gitstore import Landed

# pygit2 (about 40 ms to import), the git writer and the secret scanner load at their first use:
# a search on a fresh index reads HEAD from git's files and never needs them.

CONFIG_NAME = "quipu.toml"


class Store:
    """One memory store on disk. Cheap to construct; the git repository opens lazily."""

    def __init__(self, root: Path, how: str = "--store") -> None:
        self.root = Path(root)
        self.how = how
        self.layer = ""  # "project" or "user" when read together with the other (``layers``)
        self._repos = thread_local()  # each thread's own repository: libgit2's are not shared
        self._cache: Path | None = None

    # ------------------------------------------------------------ finding and creating

    @classmethod
    def find(
        cls, explicit: str | None = None, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> Store:
        root, how = locate.find_store_root(explicit, cwd, env)
        store = cls(Path(root), how)
        store.check()
        return store

    def check(self) -> None:
        if not self.root.is_dir():
            fix = ("it is a file: pass --store (or set QUIPU_STORE to) a store's folder" if self.root.exists()
                   else f"run `quipu init {self.root}` to create it, or pass --store PATH / set QUIPU_STORE")
            raise NoStore(f"no memory store at {self.root} (chosen by {self.how})\n- {fix}")
        if locate.git_dir(str(self.root)) is None:
            raise NoStore(f"{self.root} (chosen by {self.how}) is not a git repository, so it is not a quipu store\n"
                          + self._init_fix("make it one"))
        if not (self.root / CONFIG_NAME).is_file():
            raise NoStore(f"{self.root} is a git repository but not a quipu store (no {CONFIG_NAME})\n"
                          + self._init_fix("add the store files"))

    def missing(self, memory_id: str) -> NotFound:
        from quipu.store.layers import missing  # the per-user store may hold it: the fix says so
        return missing(self, memory_id)

    def _init_fix(self, what: str) -> str:
        """The way forward `quipu init` accepts: this folder when it is empty, else a new one."""
        from quipu.store.create import init_refusal

        if init_refusal(self.root) is None:
            return f"- run `quipu init {self.root}` to {what}"
        inner = self.root / ".quipu"
        return (f"- it holds other files, so quipu will not turn it into a store; make one beside them: "
                f"`quipu init {inner}` (found from anywhere inside {self.root}), then use --store {inner}\n"
                f"- or point --store / QUIPU_STORE at an existing store")

    @classmethod
    def init(cls, path: Path) -> tuple[Store, bool]:
        """Create a store at ``path`` from the template; returns (store, created)."""
        from quipu.store import create

        return create.init_store(cls, path)

    @property
    def repo(self) -> pygit2.Repository:
        """The store's git repository, opened once per thread (a long-lived server calls from
        several; one libgit2 repository must not be used by two threads at once)."""
        repo: pygit2.Repository | None = getattr(self._repos, "repo", None)
        if repo is None:
            from quipu.store import gitstore

            repo = self._repos.repo = gitstore.open_repo(self.root)
        return repo

    @property
    def objects(self) -> gitobj.Objects:
        """The store's git objects read and written without libgit2, one reader per thread."""
        objects: gitobj.Objects | None = getattr(self._repos, "objects", None)
        if objects is None:
            from quipu.store import gitobj

            objects = self._repos.objects = gitobj.Objects(os.path.normpath(self.gitdir))
        return objects

    def landed(self) -> Landed | None:
        """The last write this thread made through ``commit`` (for the index to take as written)."""
        return getattr(self._repos, "landed", None)

    @property
    def gitdir(self) -> str:
        return locate.git_dir(str(self.root)) or str(self.root / ".git")

    @property
    def cache_dir(self) -> Path:
        """``<root>/.cache``, checked to be a real folder holding no symlink (``quipu.store.safepath``)."""
        if self._cache is None:
            from quipu.store import safepath

            self._cache = safepath.cache_dir(self.root)
        return self._cache

    @property
    def index_path(self) -> Path:
        return self.cache_dir / locate.INDEX_NAME

    def head(self) -> str | None:
        return locate.read_head(self.gitdir)

    def config(self) -> dict[str, Any]:
        """The committed ``quipu.toml`` as written; use ``quipu.store.settings`` for what is in force."""
        from quipu.store import settings

        return settings.store_config(self.root)

    # ------------------------------------------------------------ reading

    def head_tree(self) -> pygit2.Tree:
        """HEAD's tree; reads work on a detached HEAD too (only writes need the branch)."""
        import pygit2

        from quipu.store import gitstore

        repo = self.repo
        try:
            return repo.head.peel(pygit2.Tree)
        except (pygit2.GitError, KeyError, ValueError):
            gitstore.branch_ref(repo)  # raises the clear error for an unborn branch
            raise

    def read_bytes(self, rel: str) -> bytes | None:
        head = self.head()
        if head is not None and len(head) == 40:
            from quipu.store import gitobj

            cached = getattr(self._repos, "tree", None)
            try:
                if cached is None or cached[0] != head:
                    cached = self._repos.tree = (head, gitobj.Tree(self.objects, self.objects.commit_tree(head)))
                return cached[1].data(rel)
            except (KeyError, gitobj.Unsupported):
                pass  # libgit2 reads it, or says clearly why it cannot
        try:
            entry = self.head_tree()[rel]
        except KeyError:
            return None
        return self.repo[entry.id].data  # type: ignore[attr-defined,no-any-return]

    def get(self, memory_id: str) -> Memory:
        check_id(memory_id)
        data = self.read_bytes(memory_path(memory_id))
        if data is None:
            raise self.missing(memory_id)
        return parse_memory(data, memory_path(memory_id))

    def exists(self, memory_id: str) -> bool:
        return self.read_bytes(memory_path(memory_id)) is not None

    def events(self, memory_id: str) -> list[tuple[str, dict[str, Any]]]:
        """Event files of a memory as (name, data), oldest first."""
        try:
            tree = self.head_tree()[event_dir(memory_id)]
        except KeyError:
            return []
        out = []
        for entry in sorted(self.repo[tree.id], key=lambda e: e.name):  # type: ignore[call-overload]  # a Tree
            try:
                out.append((entry.name, json.loads(self.repo[entry.id].data)))  # type: ignore[attr-defined]  # a Blob
            except (ValueError, RecursionError):
                continue
        return out

    def iter_memory_files(self) -> Iterator[tuple[str, bytes]]:
        repo = self.repo
        try:
            memories = self.head_tree()["memories"]
        except KeyError:
            return
        for shard in repo[memories.id]:  # type: ignore[attr-defined]
            if shard.type_str != "tree":
                continue
            for entry in repo[shard.id]:  # type: ignore[attr-defined]
                if entry.type_str == "blob" and entry.name.endswith(".md") and entry.filemode != LINK_MODE:
                    yield f"memories/{shard.name}/{entry.name}", repo[entry.id].data  # type: ignore[attr-defined]

    # ------------------------------------------------------------ writing

    def commit(
        self,
        changes: Mapping[str, bytes | None],
        summary: str,
        trailers: Mapping[str, str | None],
        *,
        create_only: Collection[str] = (), require: Collection[str] = (),
        allow_secret_like: Collection[str] = (), fields: Mapping[str, str] | None = None, marker: bool = False,
        unchanged: Mapping[str, str] | None = None,
    ) -> str:
        """One commit; ``create_only``/``require`` paths are checked under the writer lock. Every path
        is one of the store's schema (``InvalidMemory`` otherwise, and nothing is written).
        ``unchanged`` maps paths to the blob ids they were read as: a write made from a file read
        earlier is refused (``ConflictError``) when someone changed the file since.

        No secret is committed, in any file, in ``fields`` (the raw strings a file was rendered from)
        or in the message (``SecretRefused``, nothing written). Rules a person vouches for
        (``allow_secret_like``; with ``marker``, the inline marker, for what a person commits
        themselves) are skipped and named in a ``Quipu-Allowed-Secret-Like`` trailer; bytes a bulk
        writer found clean are not scanned twice (``quipu.store.scanned``)."""
        from quipu.lite import import_deferring

        import_deferring("quipu.store.scanned", ("base64", "binascii"))  # for the texts that need them
        from quipu.store import gitstore, scanned, schema, secrets_scan

        for rel in changes:
            problem = schema.place_problem(rel)
            if problem:
                raise InvalidMemory(f"refusing to write {rel}: {problem}\n"
                                    "- quipu writes only the paths of the store's schema (quipu/store/schema.py)")
        used = scanned.refuse_secrets(changes, "", allow_secret_like, marker=marker, fields=fields)
        secrets_scan.refuse_secrets({}, format_message(summary, trailers), allow_secret_like)
        # The rule names quipu adds are not scanned (``secret-like`` would read as a password).
        message = format_message(summary, {**trailers, "Quipu-Allowed-Secret-Like": ",".join(used) or None})
        landed = gitstore.write_files(
            self.root, changes, message, objects=self.objects, create_only=create_only, require=require,
            unchanged=unchanged,
        )
        if landed is None:
            raise ConflictError(f"nothing to commit for {summary!r}: the store already holds exactly this")
        self._repos.landed = landed
        return landed.commit

    def add(
        self,
        memory: Memory,
        *,
        action: str = "add",
        session: str | None = None,
        sweep: str | None = None,
        overwrite: bool = False,
        allow_secret_like: Collection[str] = (),
        marker: bool = False,
        unchanged: Mapping[str, str] | None = None,
    ) -> str:
        """Commit a new memory (or, with ``overwrite``, a new version of one); ``unchanged`` as
        for ``commit`` (``ChangedSinceRead`` when the file is no longer the blob named)."""
        if not overwrite and self.exists(memory.id):
            raise ConflictError(f"memory {memory.id!r} already exists\n"
                                "- choose another id, or supersede it with `quipu supersede`")
        for old in memory.supersedes:
            if not self.exists(old):
                raise NotFound(f"memory {memory.id} supersedes {old!r}, which is not in the store\n"
                               "- check the id with `quipu list`, or drop --supersedes")
        data = render_memory(memory)
        parse_memory(data, memory.path)  # the same validation a hand edit gets
        return self.commit(
            {memory.path: data},
            f"quipu: {action} {memory.id} {cut_words(memory.title, 60)}",
            {
                "Quipu-Action": action,
                "Quipu-Memory": memory.id,
                "Quipu-Supersedes": ",".join(memory.supersedes) or None,
                "Quipu-Session": session or memory.session,
                "Quipu-Sweep": sweep,
            },
            # Checked again under the lock: two writers racing for one id cannot both win.
            create_only=() if overwrite else (memory.path,),
            require=[memory_path(old) for old in memory.supersedes],
            allow_secret_like=allow_secret_like,
            fields=memory_fields(memory),
            marker=marker,
            unchanged=unchanged,
        )

    def add_event(
        self,
        memory_id: str,
        event: dict[str, Any],
        *,
        summary: str,
        trailers: Mapping[str, str | None],
        also_require: Collection[str] = (),
    ) -> str:
        """Commit one new event file about ``memory_id`` (and ``also_require`` ids) that must exist."""
        from quipu.store import secrets_scan

        if not self.exists(memory_id):
            raise self.missing(memory_id)
        # Decisions carry a model's or a person's words (a reason, a detail): redacted, not refused.
        event = secrets_scan.redact_values({"memory": memory_id, "at": _now(), **event})
        summary = secrets_scan.redact(summary)
        name = f"{event_dir(memory_id)}/{trailer_stamp()}-{os.urandom(3).hex()}.json"
        data = (json.dumps(event, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
        return self.commit(
            {name: data},
            summary,
            {"Quipu-Memory": memory_id, **trailers},
            require=[memory_path(m) for m in (memory_id, *also_require)],
        )

    def supersede(
        self,
        old: str,
        new: str,
        *,
        sweep: str | None = None,
        reason: str = "",
        extra_trailers: Mapping[str, str | None] | None = None,
    ) -> str:
        from quipu.store.standing import check_supersession  # refused: a loop, NEW retracted or absent

        check_supersession(self, old, new)
        in_force = self.supersession(old)
        if in_force is not None and in_force[0] == new and in_force[1]:
            return in_force[1]  # already decided: nothing is written
        return self.add_event(
            old,
            {"action": "supersede", "by": new, "reason": reason, "sweep": sweep},
            summary=f"quipu: supersede {old} by {new}",
            trailers={
                "Quipu-Action": "supersede",
                "Quipu-Supersedes": old,
                "Quipu-Superseded-By": new,
                "Quipu-Sweep": sweep,
                **(extra_trailers or {}),
            },
            also_require=(new,),
        )

    def supersession(self, old: str) -> tuple[str, str] | None:
        """(the id that supersedes ``old``, the commit of that event) when a supersession is in
        force, read from the event files the tip holds; None otherwise."""
        from quipu.store import effects

        latest: tuple[str, str] | None = None
        for name, event in self.events(old):
            if event.get("action") == "supersede" and isinstance(event.get("by"), str):
                latest = (name, event["by"])  # the last one decides, as the index folds them
        if latest is None:
            return None
        return latest[1], effects.commit_adding(self.repo, f"{event_dir(old)}/{latest[0]}")

    def retract(self, memory_id: str, *, reason: str = "", undo_sweep: str | None = None) -> str:
        """Take a memory out of recall and search (a ``retracted`` label); nothing is deleted."""
        return self.add_event(
            memory_id,
            {"action": "label", "label": "retracted", "set": True, "detail": reason},
            summary=f"quipu: retract {memory_id}",
            trailers={"Quipu-Action": "retract", "Quipu-Label": "retracted", "Quipu-Undo-Sweep": undo_sweep},
        )

    def label(
        self,
        memory_id: str,
        label: str,
        on: bool = True,
        *,
        detail: str = "",
        sweep: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        if not label or not all(c.isalnum() or c in "-_" for c in label):
            raise InvalidMemory(f"invalid label {label!r}: use letters, digits, '-' and '_'")
        return self.add_event(
            memory_id,
            {"action": "label", "label": label, "set": on, "detail": detail, "sweep": sweep, **(extra or {})},
            summary=f"quipu: {'label' if on else 'unlabel'} {memory_id} {label}",
            trailers={"Quipu-Action": "label" if on else "unlabel", "Quipu-Label": label, "Quipu-Sweep": sweep},
        )

    # ------------------------------------------------------------ history and undo

    def log(
        self,
        *,
        memory: str | None = None,
        sweep: str | None = None,
        action: str | None = None,
        limit: int | None = None,
    ) -> list[LogEntry]:
        from quipu.store import audit  # with memory=, what commits did to it (quipu.store.audit)

        return audit.log(self.repo, memory=memory, sweep=sweep, action=action, limit=limit)

    def undo(self, *, commit: str | None = None, memory: str | None = None, sweep: str | None = None) -> list[str]:
        """Revert one commit, a memory's latest decision, or every commit of a sweep (newest first);
        returns the commits made (``quipu.store.undo.undo`` says what each undid)."""
        from quipu.store import undo

        return undo.undo(self, commit=commit, memory=memory, sweep=sweep).commits


def memory_fields(memory: Memory) -> dict[str, str]:
    """Every string a memory file is rendered from, named ``<path> (<field>)`` for a refusal."""
    path = memory.path
    return {f"{path} (title)": memory.title, f"{path} (description)": memory.description, f"{path} (body)": memory.body,
            f"{path} (topics)": "\n".join(memory.topics), f"{path} (entities)": "\n".join(memory.entities),
            f"{path} (aliases)": "\n".join(memory.aliases),
            f"{path} (other fields)": "\n".join(str(v) for v in memory.extra.values() if isinstance(v, str))}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_store(path: str) -> bool:
    return os.path.isfile(os.path.join(path, CONFIG_NAME)) and locate.git_dir(path) is not None
