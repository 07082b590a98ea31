"""The sweep's enrichment: aliases for the memories that have none, several memories a model call.

A note imported or written with ``quipu add`` holds only its author's words; a person looking
for it later types other ones. Capture asks for aliases when it writes a memory; this pass asks
for the rest, a few at a time, on the sweep's budget.

Contract:
- ``wanting(corpus, focus, tried)``: the active memories without aliases (``focus``: only
  those), less the ones already asked about in their current form (``tried``), newest first;
  ``to_ask`` less those whose aliases a person took back (``declined``).
- ``enrich_pass(store, corpus, model, sweep_id, ...)`` asks ``quipu.capture.enrich.propose`` for
  BATCH memories (at most BATCH_CHARS of prompt) a call, until the model's budget (the sweep's,
  what the pairs left of it) or ``max_calls`` stops it. Each memory
  that gains aliases is its own commit (``Quipu-Action: enrich``, ``Quipu-Memory``,
  ``Quipu-Sweep``), so ``quipu undo --memory`` or ``--sweep`` takes it back, and only the
  ``aliases`` field changes. The commit is made only if the file is still the one the model was
  shown (``Store.commit(unchanged=...)``): an edit made meanwhile wins, and the memory is asked
  again by a later sweep.
- A memory asked about is remembered in the git-ignored ``<store>/.cache/enrich-tried.jsonl``
  under its file's fingerprint as it was asked (whether its answer kept aliases or none) and not
  asked again until the file changes; a failed call marks nothing. So a person's ``quipu undo``
  of the aliases, which brings the file back to those bytes, is not undone by the next sweep.
  ``declined`` reads from git the version each enrichment commit gave aliases to (a commit
  judged by what it did, ``quipu.store.effects``): a memory back at that version (compared as
  quipu renders it, so "aliases: []" and no aliases line are the same) had its aliases taken
  back by a person (``quipu undo``, a plain ``git revert``, an edit), and is not asked again
  until it changes, whether the cache is there or not, in this store or a clone. It reads the
  branch's log the sweep's ledger read (``history``), or the log itself when given none.
- The budget and an unavailable model stop the pass (the rest is left for the next sweep); any
  other model error skips that call's memories.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from quipu.capture import enrich
from quipu.curate.corpus import Corpus, Entry
from quipu.errors import ConflictError, FatalError, NotFound
from quipu.model import BudgetExceeded, MeteredModel, ModelError, ModelUnavailable
from quipu.store import effects, gitobj
from quipu.store.memory import ID_RE, Memory, memory_path, parse_memory, render_memory
from quipu.store.store import Store, memory_fields
from quipu.store.trailers import LogEntry, cut_words

TRIED_NAME = "enrich-tried.jsonl"
BATCH = 8                # memories a call
BATCH_CHARS = 12_000     # of prompt a call (each note's body is cut at enrich.MAX_NOTE_CHARS)


@dataclass
class EnrichReport:
    wanting: int = 0
    asked: int = 0
    enriched: list[dict[str, Any]] = field(default_factory=list)  # {memory, aliases, commit}
    without: int = 0    # asked, and nothing the model said was kept
    skipped: list[dict[str, Any]] = field(default_factory=list)   # {memories | memory, reason}
    deferred: int = 0
    stopped: str | None = None
    failed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"wanting": self.wanting, "asked": self.asked, "enriched": self.enriched, "without": self.without,
                "skipped": self.skipped, "deferred": self.deferred}


def load_tried(store: Store) -> set[tuple[str, str]]:
    """(id, fingerprint) of the memory versions already asked about (the cache)."""
    out: set[tuple[str, str]] = set()
    with contextlib.suppress(OSError):
        for line in (store.cache_dir / TRIED_NAME).read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, TypeError, KeyError):
                item = json.loads(line)
                out.add((str(item["id"]), str(item["fp"])))
    return out


def canonical(memory: Memory) -> str:
    """A memory's fingerprint as quipu renders it: the same for every way of writing the same
    fields ("aliases: []" or no aliases line at all)."""
    return hashlib.sha1(render_memory(memory)).hexdigest()[:12]


def declined(store: Store, ids: Collection[str], history: Sequence[LogEntry] | None = None) -> dict[str, set[str]]:
    """{id: ``canonical`` fingerprints} of each version of the memories ``ids`` that an
    enrichment commit gave aliases to: a memory back at one of them had its aliases taken back by
    a person (``quipu undo``, a plain ``git revert``, an edit), here or in any clone. Each commit
    is judged by what it did to the memory's file (only aliases added), never by its message;
    only the commits of ``ids`` are read (a memory that kept its aliases is never asked about).
    ``history``: the branch's log when the caller has read it already (the sweep's ledger)."""
    repo = store.repo
    out: dict[str, set[str]] = {}
    for entry in store.log(action="enrich") if history is None else history:
        if entry.action != "enrich" or entry.memory not in ids or not ID_RE.fullmatch(entry.memory):
            continue
        path = memory_path(entry.memory)  # the trailer only says where to look
        change = effects.change_at(repo, entry.commit, path)
        old, new = change if change is not None else (None, None)
        if old is None or new is None:
            continue
        try:
            before = parse_memory(repo[old[0]].data, path)  # type: ignore[attr-defined]
            after = parse_memory(repo[new[0]].data, path)  # type: ignore[attr-defined]
        except FatalError:
            continue
        if len(after.aliases) > len(before.aliases) and after.with_changes(aliases=before.aliases) == before:
            out.setdefault(before.id, set()).add(canonical(before))
    return out


def _mark_tried(store: Store, entries: Sequence[Entry]) -> None:
    if not entries:
        return
    with contextlib.suppress(OSError):
        store.cache_dir.mkdir(parents=True, exist_ok=True)
        with (store.cache_dir / TRIED_NAME).open("a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps({"id": e.id, "fp": e.fingerprint}) + "\n" for e in entries))


def wanting(corpus: Corpus, focus: Collection[str] | None, tried: set[tuple[str, str]]) -> list[Entry]:
    """The active memories without aliases, not yet asked about in this form, newest first."""
    out = [e for e in corpus.active() if not e.memory.aliases and (focus is None or e.id in focus)
           and (e.id, e.fingerprint) not in tried]
    return sorted(out, key=lambda e: (-e.created_ts, e.id))


def to_ask(store: Store, corpus: Corpus, focus: Collection[str] | None,
           history: Sequence[LogEntry] | None = None) -> list[Entry]:
    """``wanting``, less the memories back at a version whose aliases a person took back (``declined``)."""
    todo = wanting(corpus, focus, load_tried(store))
    refused = declined(store, {e.id for e in todo}, history) if todo else {}
    return [e for e in todo if not (e.id in refused and canonical(e.memory) in refused[e.id])]


def pending(store: Store, corpus: Corpus, focus: Collection[str] | None,
            history: Sequence[LogEntry] | None = None) -> EnrichReport:
    """What a pass that asks nothing reports: every memory that wants aliases is left for later."""
    want = len(to_ask(store, corpus, focus, history))
    return EnrichReport(wanting=want, deferred=want)


def batches(entries: Sequence[Entry], size: int = BATCH, chars: int = BATCH_CHARS) -> list[list[Entry]]:
    """``entries`` in order, cut into calls of at most ``size`` memories and about ``chars`` of prompt."""
    out: list[list[Entry]] = []
    current: list[Entry] = []
    used = 0
    for entry in entries:
        m = entry.memory
        cost = len(m.title) + len(m.description) + min(len(m.body), enrich.MAX_NOTE_CHARS) + 64
        if current and (len(current) >= size or used + cost > chars):
            out.append(current)
            current, used = [], 0
        current.append(entry)
        used += cost
    if current:
        out.append(current)
    return out


def _commit(store: Store, entry: Entry, aliases: Sequence[str], sweep_id: str) -> str:
    memory = entry.memory.with_changes(aliases=tuple(aliases))
    return store.commit(
        {memory.path: render_memory(memory)},
        f"quipu: enrich {memory.id} {cut_words(memory.title, 60)}",
        {"Quipu-Action": "enrich", "Quipu-Memory": memory.id, "Quipu-Sweep": sweep_id},
        require=(memory.path,), unchanged={memory.path: gitobj.object_id("blob", entry.data)},
        fields=memory_fields(memory),
    )


def enrich_pass(store: Store, corpus: Corpus, model: MeteredModel, sweep_id: str, *,
                focus: Collection[str] | None = None, max_calls: int | None = None,
                history: Sequence[LogEntry] | None = None) -> EnrichReport:
    """Ask for the aliases of the memories that want them (see the module contract)."""
    report = EnrichReport()
    todo = to_ask(store, corpus, focus, history)
    report.wanting = len(todo)
    calls = batches(todo)
    for n, batch in enumerate(calls):
        if max_calls is not None and n >= max_calls:
            report.deferred = sum(len(b) for b in calls[n:])
            break
        ids = [e.id for e in batch]
        try:
            answer = enrich.propose(model, [e.memory for e in batch])
        except (BudgetExceeded, ModelUnavailable) as exc:
            report.stopped = str(exc).split("\n", 1)[0]
            report.failed = isinstance(exc, ModelUnavailable)
            report.deferred = sum(len(b) for b in calls[n:])
            break
        except ModelError as exc:
            report.skipped.append({"memories": ids, "reason": f"{type(exc).__name__}: {exc}"})
            continue
        report.asked += len(batch)
        nothing: list[Entry] = []
        for entry in batch:
            kept = answer.get(entry.id)
            if kept is None:
                continue  # not answered: asked again next time
            if not kept:
                nothing.append(entry)
                continue
            try:
                sha = _commit(store, entry, kept, sweep_id)
            except (ConflictError, NotFound) as exc:
                report.skipped.append({"memory": entry.id, "reason": str(exc).split("\n", 1)[0]})
                continue
            except FatalError as exc:  # a secret or an invalid field: nothing written
                report.skipped.append({"memory": entry.id, "reason": f"{type(exc).__name__}: {exc}"})
                nothing.append(entry)
                continue
            report.enriched.append({"memory": entry.id, "aliases": list(kept), "commit": sha})
        report.without += len(nothing)
        _mark_tried(store, [e for e in batch if e.id in answer])
    return report
