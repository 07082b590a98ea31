"""Verification: check what memories claim, and label the ones reality contradicts.

Contract:
- ``verify(store, extractor, options)`` reads each memory (the given ids, whatever their status, or
  every active one: superseded and retracted memories are left out),
  takes its claims from the cache or from the extractor (``quipu.verify.claims``), passes *every* raw
  item, cached or fresh, through ``probes.validate_extraction`` before anything runs, runs the
  accepted ones (in a small thread pool: probes start argv-only subprocesses with timeouts) and
  records each claim's result in the claim cache.
- Refusals never run. A pull-request claim in any state but "merged" (``args.state`` "open",
  or a probe name such as ``pr-open``) is refused and counted apart as ``pr_state_refused``;
  every other refusal counts as ``refused``. Every refusal, and every argv a probe starts, is
  appended to ``<store>/.cache/verify.log`` with the run id and the memory id.
- A claim whose root (a project name) has no folder in this run is validated against a
  placeholder and, if valid, reported ``unknown`` with the fix; nothing runs for it.
- Labels: a memory with a failed claim gets the ``unverified`` label (one commit, trailer
  ``Quipu-Sweep: <run id>``, detail ``<probe>: <detail>``, where a root is named, never its folder,
  and the home is ``~``: the detail is shared with the store) unless it already has it. A memory
  whose every claim was checked in this run and passed loses an ``unverified`` label that a
  verify run set (another commit); a label a person set stays. ``unknown`` changes nothing, and
  no commit is written when the state does not change. ``quipu undo --sweep <run id>`` reverts a
  run's label commits.
- Absolute and ``~/`` paths are checked only under the home and the run's roots, and a memory's
  absolute ``project`` folder (the store's word) is a root only inside them; ``Options.any_path``
  (the user's choice, never a store's) lets paths be checked anywhere.
- Counts add up: ``extracted == passed + failed + unknown + refused + pr_state_refused``.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from quipu.errors import FatalError, InvalidMemory
from quipu.model import BudgetExceeded, ModelError, ModelUnavailable
from quipu.probes import PROBES, Context, ProbeResult
from quipu.probes.base import LogEntry
from quipu.store.memory import Memory, memory_path, parse_memory
from quipu.store.store import Store
from quipu.verify import claims as claims_mod
from quipu.verify.claims import ClaimCache, ClaimResult, Extractor
from quipu.verify.prepare import Prepared, check_claim, prepare

LABEL = "unverified"
SOURCE = "verify"  # recorded in the label event, so a later run clears only labels a run set
LOG_NAME = "verify.log"
INACTIVE = ("superseded", "retracted")  # statuses --all leaves out

Progress = Callable[[int, int, str], None]
_COUNTER = {"pass": "passed", "fail": "failed", "unknown": "unknown"}


class Options(NamedTuple):
    """What a run may touch. ``roots`` maps project names to folders (``home`` is reserved)."""

    home: str
    roots: Mapping[str, str] = {}
    timeout: float = 10.0
    allow_loopback: bool = False
    env: Mapping[str, str] | None = None
    probe: str | None = None  # check only claims of this probe
    jobs: int = 4
    any_path: bool = False  # check absolute and ~/ paths anywhere, not only under home and the roots


@dataclass
class MemoryReport:
    id: str
    title: str
    claims: list[ClaimResult] = field(default_factory=list)
    cached: bool = False
    label: str = ""  # "labelled", "cleared" or ""
    commit: str = ""
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "cached": self.cached, "label": self.label or None,
            "commit": self.commit or None, "error": self.error or None,
            "claims": [c.to_json() for c in self.claims],
        }


@dataclass
class Summary:
    run: str
    extractor: str
    memories: int = 0
    extracted: int = 0
    cached: int = 0
    extractions: int = 0
    passed: int = 0
    failed: int = 0
    unknown: int = 0
    refused: int = 0
    pr_state_refused: int = 0
    labelled: int = 0
    cleared: int = 0
    extraction_errors: int = 0
    stopped: str = ""
    reports: list[MemoryReport] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # extract, check, label (wall time)

    COUNTS = (
        "memories", "extracted", "passed", "failed", "unknown", "refused", "pr_state_refused", "labelled",
        "cleared",
    )

    @property
    def commits(self) -> list[str]:
        return [r.commit for r in self.reports if r.commit]

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.COUNTS}

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run, "extractor": self.extractor, **self.counts(), "cached": self.cached,
            "extractions": self.extractions, "extraction_errors": self.extraction_errors,
            "stopped": self.stopped or None, "commits": self.commits,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "memories_checked": [r.to_json() for r in self.reports],
        }


def new_run_id() -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"verify-{stamp}-{secrets.token_hex(3)}"


# ---------------------------------------------------------------- the log


class RunLog:
    """Appends refusals and started argv to ``verify.log``, one JSON line each, thread-safe."""

    def __init__(self, path: Path, run_id: str) -> None:
        self.path, self.run_id = path, run_id
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def writer(self, memory_id: str) -> Callable[[LogEntry], None]:
        def write(entry: LogEntry) -> None:
            line = {
                "time": claims_mod.now(), "run": self.run_id, "memory": memory_id, "kind": entry.kind,
                "detail": entry.detail, "argv": list(entry.argv),
            }
            text = json.dumps(line, ensure_ascii=True) + "\n"
            with self._lock, open(self.path, "a", encoding="utf-8") as fh:
                fh.write(text)

        return write


# ---------------------------------------------------------------- labels


def label_state(events: Iterable[tuple[str, dict[str, Any]]]) -> tuple[bool, bool]:
    """(the memory has the label now, the last time it was set a verify run set it)."""
    on, by_verify = False, False
    for _name, event in events:
        if event.get("action") == "label" and event.get("label") == LABEL:
            on = bool(event.get("set", True))
            by_verify = on and event.get("source") == SOURCE
    return on, by_verify


def public_detail(detail: str, ctx: Context) -> str:
    """``detail`` fit for a shared store: each root's folder by the root's name, the home as ``~``.

    The probes already name roots; this holds for any detail, whatever a tool printed into it.
    """
    names: dict[str, str] = {}
    roots = [(folder, "the project" if os.path.isabs(name) else name) for name, folder in ctx.roots.items()]
    for folder, name in [(ctx.home, "~"), *roots]:
        for form in {os.path.normpath(folder), os.path.realpath(folder)}:
            if form != os.sep:
                names[form] = name
    for folder in sorted(names, key=len, reverse=True):
        detail = re.sub(re.escape(folder) + r"(?![^/\s)'\",;:])", names[folder].replace("\\", "\\\\"), detail)
    return detail


def _decide_label(
    store: Store, report: MemoryReport, complete: bool, run_id: str, indexed_on: bool, ctx: Context
) -> None:
    """Label, clear or leave alone; ``indexed_on`` (the index's view) only spares reading events."""
    checked = [c for c in report.claims if c.status in ("pass", "fail", "unknown")]
    fails = [c for c in checked if c.status == "fail"]
    all_hold = complete and bool(checked) and all(c.status == "pass" for c in checked)
    if (not fails and not all_hold) or (fails and indexed_on) or (all_hold and not indexed_on):
        return
    on, by_verify = label_state(store.events(report.id))  # the truth, read only before a change
    if fails and not on:
        detail = public_detail(f"{fails[0].probe}: {fails[0].detail}", ctx)
        if len(fails) > 1:
            detail += f" (and {len(fails) - 1} more failed claim{'s' if len(fails) > 2 else ''})"
        report.commit = store.label(report.id, LABEL, True, detail=detail, sweep=run_id, extra={"source": SOURCE})
        report.label = "labelled"
    elif all_hold and on and by_verify:
        detail = f"all {len(checked)} claim{'s' if len(checked) > 1 else ''} hold"
        report.commit = store.label(report.id, LABEL, False, detail=detail, sweep=run_id, extra={"source": SOURCE})
        report.label = "cleared"


# ---------------------------------------------------------------- the run


def _memories(store: Store, ids: Sequence[str] | None) -> list[tuple[Memory, bytes]]:
    if ids:
        out = []
        for mid in dict.fromkeys(ids):
            store.get(mid)  # NotFound, with the fix, for an unknown id
            path = memory_path(mid)
            data = store.read_bytes(path) or b""
            out.append((parse_memory(data, path), data))
        return out
    from quipu.index import index

    inactive = {r["id"] for r in index.rows(store, f"SELECT id FROM memories WHERE status IN {INACTIVE!r}")}
    out = []
    for path, data in sorted(store.iter_memory_files()):
        try:
            memory = parse_memory(data, path)
        except InvalidMemory:  # a broken file is `quipu doctor`'s business, not verify's
            continue
        if memory.id not in inactive:
            out.append((memory, data))
    return out


def _labelled(store: Store) -> set[str]:
    """Memories the index shows with the label (the index is brought up to HEAD first)."""
    from quipu.index import index

    rows = index.rows(store, "SELECT id, labels FROM memories WHERE labels != ''")
    return {r["id"] for r in rows if LABEL in r["labels"].split()}


def _context(memory: Memory, options: Options, log: RunLog) -> Context:
    roots = dict(options.roots)
    project = memory.project
    # A memory's project folder is the store's word: a root only inside what this run may look at.
    if project and os.path.isabs(project) and project not in roots and os.path.isdir(project) \
            and (options.any_path or _inside(project, [options.home, *roots.values()])):
        roots[project] = project
    allowed = (os.sep,) if options.any_path else tuple(dict.fromkeys([options.home, *roots.values()]))
    return Context(
        roots=roots, home=options.home, allowed_roots=allowed, timeout=options.timeout, env=options.env,
        allow_loopback=options.allow_loopback, on_log=log.writer(memory.id),
    )


def _inside(folder: str, bases: Iterable[str]) -> bool:
    """Whether ``folder``, links resolved, is one of ``bases`` or inside one."""
    real = os.path.realpath(folder)
    for base in bases:
        with contextlib.suppress(ValueError):
            if os.path.commonpath((real, os.path.realpath(base))) == os.path.realpath(base):
                return True
    return False


class _Work(NamedTuple):
    report: MemoryReport
    ctx: Context
    sha: str  # of the memory file, for the results it gets
    items: list[Prepared]


def _gather(
    store: Store, ids: Sequence[str] | None, extractor: Extractor, options: Options, cache: ClaimCache,
    log: RunLog, summary: Summary, progress: Progress | None,
) -> list[_Work]:
    """Each memory's claims, from the cache or the extractor, validated under its context."""
    memories = _memories(store, ids)
    work: list[_Work] = []
    for n, (memory, data) in enumerate(memories, 1):
        report = MemoryReport(memory.id, memory.title)
        key = claims_mod.content_key(data, extractor.identity)
        raw = cache.get(key)
        report.cached = raw is not None
        if raw is None and not summary.stopped:
            try:
                raw = extractor.extract(memory)
            except (ModelUnavailable, BudgetExceeded) as exc:  # no later call would work either
                summary.stopped = str(exc)
            except ModelError as exc:  # this answer was garbage; the next memory may fare better
                report.error = str(exc)
                summary.extraction_errors += 1
                summary.reports.append(report)
            except Exception as exc:  # noqa: BLE001 - what one memory says must not stop the others
                report.error = f"its claims could not be read: {type(exc).__name__}: {claims_mod.clean_quote(str(exc))}"
                summary.extraction_errors += 1
                summary.reports.append(report)
            else:
                summary.extractions += 1
                cache.put(key, memory.id, extractor.identity, raw)
            if progress is not None:
                progress(n, len(memories), "extracting")
        if raw is None:
            continue
        summary.memories += 1
        summary.cached += report.cached
        ctx = _context(memory, options, log)
        work.append(_Work(report, ctx, claims_mod.memory_sha(data), prepare(raw, ctx, only=options.probe)))
    return work


def _check_all(work: Sequence[_Work], jobs: int, progress: Progress | None) -> dict[tuple[int, int], ProbeResult]:
    """Run every accepted claim, a few at a time; keyed by (work index, claim index)."""
    results: dict[tuple[int, int], ProbeResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {
            pool.submit(check_claim, p.spec, w.ctx): (n, p.idx)
            for n, w in enumerate(work) for p in w.items if p.spec is not None
        }
        for done, future in enumerate(as_completed(futures), 1):
            results[futures[future]] = future.result()
            if progress is not None:
                progress(done, len(futures), "checking")
    return results


def _tally(summary: Summary, kind: str, status: str) -> None:
    summary.extracted += 1
    counter = {"pr-state": "pr_state_refused", "refused": "refused"}.get(kind) or _COUNTER.get(status, "unknown")
    setattr(summary, counter, getattr(summary, counter) + 1)


def _settle(
    store: Store, work: Sequence[_Work], results: Mapping[tuple[int, int], ProbeResult], options: Options,
    cache: ClaimCache, summary: Summary,
) -> None:
    """Record each claim's result, then label or clear each memory as its results say."""
    checked_at = claims_mod.now()
    labelled_now = _labelled(store)
    for n, w in enumerate(work):
        report = w.report
        for p in w.items:
            if p.kind == "run":
                status, detail = results[(n, p.idx)]
            else:
                status, detail = ("unknown" if p.kind == "unresolved" else "refused"), p.detail
            _tally(summary, p.kind, status)
            report.claims.append(
                ClaimResult(report.id, p.idx, p.probe, p.args, p.quote, status, detail, checked_at, summary.run)
            )
        _decide_label(store, report, options.probe is None, summary.run, report.id in labelled_now, w.ctx)
        summary.labelled += report.label == "labelled"
        summary.cleared += report.label == "cleared"
        probes_run = None if options.probe is None else sorted({c.probe for c in report.claims} | {options.probe})
        cache.record(report.id, w.sha, probes_run, report.claims)
        summary.reports.append(report)


def verify(
    store: Store,
    extractor: Extractor,
    options: Options,
    *,
    ids: Sequence[str] | None = None,
    run_id: str | None = None,
    progress: Progress | None = None,
) -> Summary:
    """Check the claims of ``ids`` (every active memory when empty) and label the results."""
    if options.probe is not None and options.probe not in PROBES:
        raise FatalError(f"unknown probe {options.probe!r}\n- use one of: {', '.join(PROBES)}")
    summary = Summary(run=run_id or new_run_id(), extractor=extractor.identity)
    log = RunLog(store.cache_dir / LOG_NAME, summary.run)
    with ClaimCache(claims_mod.cache_path(store.cache_dir)) as cache:
        start = time.perf_counter()
        work = _gather(store, ids, extractor, options, cache, log, summary, progress)
        summary.seconds["extract"] = time.perf_counter() - start
        results = _check_all(work, options.jobs, progress)
        summary.seconds["check"] = time.perf_counter() - start - summary.seconds["extract"]
        _settle(store, work, results, options, cache, summary)
    summary.seconds["label"] = time.perf_counter() - start - summary.seconds["extract"] - summary.seconds["check"]
    return summary
