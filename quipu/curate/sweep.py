"""A curator sweep: the deterministic pass and the model pass once, under a lock and a budget.

Contract:
- ``run_sweep`` holds ``<store>/.cache/sweep.lock`` (``flock``) for its whole run, so two sweeps
  never run at once; a second one gets ``SweepBusy`` (or waits up to ``lock_wait`` seconds).
- Every decision is its own commit tagged ``Quipu-Sweep: <sweep id>``, so ``quipu undo --sweep``
  reverts the run and a sweep killed at any point leaves a consistent store: the next sweep sees
  every decision that reached a commit (``quipu.curate.ledger``) and continues with the rest.
- A decision the deterministic pass would make (a finding's label and review item, a
  consistency item) that a person took back from the memory as it is now
  (``Ledger.took_back``) is left alone: not written, listed in the report's ``left_alone``
  (``taken_back``: how many), and a duplicate's pair is not sent to the model either.
- The model is wrapped in a ``MeteredModel``: the run never passes its ``Budget``; every call is
  a line in ``<store>/.cache/model-calls.jsonl``. When the budget is reached the remaining pairs
  are left for the next run (reported as deferred).
- A verdict that cannot be used (not JSON, wrong shape, unknown id, confidence outside 0..1, a
  failed call) is skipped with its reason in the report and in ``<store>/.cache/sweep.log``, and
  changes nothing. ``ModelUnavailable`` stops the model pass (reported in ``stopped``).
- Then the enrichment (``quipu.curate.enrichment``): aliases for memories without any, on what is
  left of the same budget, each memory's aliases a commit of the same sweep. ``enrich=False``
  skips it.
- ``dry_run`` asks no model and writes nothing: it reports the findings, the pairs it would send
  and how many memories want aliases.
- The report is also written to ``<store>/.cache/sweeps/<sweep id>.json``.
- ``spawn_detached`` starts a process in its own session with stdio on /dev/null and returns at
  once; the hook entry points use it to hand the per-session work (``per_session_work``) to a
  child that outlives Claude Code's 1.5 s SessionEnd budget.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quipu.curate import consistency
from quipu.index import index
from quipu.prompt import fence, launch
from quipu.curate import apply, candidates, deterministic, enrichment
from quipu.curate.corpus import Corpus, load
from quipu.curate.ledger import CONSISTENCY, Ledger, load_ledger
from quipu.curate.verdict import ACTING_VERDICTS, SCHEMA, BadVerdict, Verdict, build_prompt, check_guards
from quipu.errors import FatalError
from quipu.model import Budget, BudgetExceeded, MeteredModel, Model, ModelError, ModelUnavailable
from quipu.store.store import Store

LOCK_NAME = "sweep.lock"
CALLS_LOG = "model-calls.jsonl"
SWEEP_LOG = "sweep.log"
REPORTS_DIR = "sweeps"
# The daily sweep's default budget: about one small call per memory a day would be far too much
# plan quota; 100 calls of at most ~4 KB each is a few minutes of `claude -p` and stays well
# inside a subscription's daily use. Raise it with --max-calls / --max-chars or [sweep] in $QUIPU_HOME/config.toml.
DEFAULT_MAX_CALLS = 100
DEFAULT_MAX_CHARS = 400_000
# The per-session work after SessionEnd / PreCompact: a handful of calls, the newest memories.
SESSION_MAX_CALLS = 4
SESSION_MAX_CHARS = 24_000
SESSION_NEWEST = 20
SESSION_LOCK_WAIT = 600.0  # a session's work waits this long for a running sweep, then gives up


class SweepBusy(FatalError):
    """Another sweep holds the lock."""


def new_sweep_id(now: _dt.datetime | None = None) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return f"sw-{now.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(2)}"


@contextlib.contextmanager
def sweep_lock(store: Store, sweep_id: str, *, wait: float = 0.0) -> Iterator[None]:
    """Hold the store's sweep lock; ``SweepBusy`` when it stays taken for ``wait`` seconds."""
    store.cache_dir.mkdir(parents=True, exist_ok=True)
    path = store.cache_dir / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = path.read_text(encoding="utf-8", errors="replace").strip() or "another process"
                    raise SweepBusy(
                        f"another sweep is running on {store.root} ({holder})\n"
                        "- wait for it to finish; it releases the lock when it ends or is killed"
                    ) from None
                time.sleep(0.5)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, sweep {sweep_id}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock (also when the process is killed)


@dataclass
class SweepOptions:
    project_root: Path | None = None
    dry_run: bool = False
    focus: frozenset[str] | None = None  # only pairs and findings touching these memories
    lock_wait: float = 0.0
    progress: Callable[[int, int], None] | None = None
    enrich: bool = True


@dataclass
class SweepReport:
    sweep_id: str
    model: str
    dry_run: bool = False
    memories: int = 0
    all_pairs: int = 0
    candidate_pairs: int = 0
    sent: int = 0
    unrelated: int = 0
    dropped: int = 0  # pairs whose member was superseded earlier in this sweep: nothing left to ask
    deferred: int = 0
    applied: list[dict[str, Any]] = field(default_factory=list)
    queued: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    would_send: list[dict[str, Any]] = field(default_factory=list)
    budget: dict[str, int | None] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None
    failed: bool = False  # the model pass stopped because the model was unavailable (not the budget)
    commits: list[str] = field(default_factory=list)
    seconds: float = 0.0
    enrich: dict[str, Any] = field(default_factory=dict)
    left_alone: list[dict[str, Any]] = field(default_factory=list)  # decisions a person took back, not made again
    capture: dict[str, Any] | None = None  # after a session: capture's report (``per_session_work``)

    def to_json(self) -> dict[str, Any]:
        return {
            "sweep": self.sweep_id, "model": self.model, "dry_run": self.dry_run, "memories": self.memories,
            "pairs": {"all": self.all_pairs, "candidates": self.candidate_pairs, "sent": self.sent,
                      "applied": len(self.applied), "queued": len(self.queued), "unrelated": self.unrelated,
                      "skipped": len(self.skipped), "dropped": self.dropped,
                      "deferred": self.deferred},
            "applied": self.applied, "queued": self.queued, "skipped": self.skipped,
            "findings": self.findings, "would_send": self.would_send, "budget": self.budget,
            "enrich": self.enrich, "usage": self.usage, "stopped": self.stopped, "failed": self.failed,
            "left_alone": {"taken_back": len(self.left_alone), "decisions": self.left_alone},
            **({"capture": self.capture} if self.capture is not None else {}),
            "commits": self.commits,
            "seconds": round(self.seconds, 3),
        }


def _log_skip(store: Store, sweep_id: str, item: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        store.cache_dir.mkdir(parents=True, exist_ok=True)
        line = {"time": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "sweep": sweep_id, **item}
        with (store.cache_dir / SWEEP_LOG).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")


def _deterministic_pass(store: Store, corpus: Corpus, ledger: Ledger, report: SweepReport,
                        options: SweepOptions) -> None:
    findings = deterministic.find_duplicates(corpus, focus=options.focus, is_decided=ledger.is_decided)
    findings += deterministic.find_dead_paths(corpus, project_root=options.project_root, focus=options.focus,
                                              flagged_before=ledger.flagged_paths)
    for finding in findings:
        undone = ledger.took_back(finding.kind, corpus.entries[finding.memory].memory, other=finding.other,
                                  paths=finding.paths)
        if undone is not None:  # a person took this very decision back: it stays taken back
            report.left_alone.append(undone.to_json())
            if finding.other:
                ledger.note(finding.memory, finding.other, "undone")  # and no model is asked about the pair
            continue
        item: dict[str, Any] = {"kind": finding.kind, "memory": finding.memory, "other": finding.other,
                                "detail": finding.detail}
        if not options.dry_run:
            review_id, sha = apply.flag_finding(store, finding, report.sweep_id)
            item.update(review=review_id, commit=sha)
            report.commits.append(sha)
        if finding.other:
            ledger.note(finding.memory, finding.other, "review")
        report.findings.append(item)
    _consistency_pass(store, corpus, ledger, report, options)


def _consistency_pass(store: Store, corpus: Corpus, ledger: Ledger, report: SweepReport,
                      options: SweepOptions) -> None:
    """Across boundaries: profile lines against memories, rules against the project's CLAUDE.md."""
    tensions = []
    for tension in consistency.find_tensions(store, options.project_root):
        entry = corpus.entries.get(tension.memory)
        undone = None if entry is None else ledger.took_back(CONSISTENCY, entry.memory,
                                                             fingerprint=tension.fingerprint)
        if undone is not None:
            report.left_alone.append(undone.to_json())
        else:
            tensions.append(tension)
    if not options.dry_run:
        report.commits.extend(consistency.queue(store, tensions, sweep=report.sweep_id))
    for tension in tensions:
        report.findings.append({"kind": f"consistency-{tension.against}", "memory": tension.memory, "other": None,
                                "detail": f"{tension.why}: {tension.claim!r} vs {tension.other!r} ({tension.where})"})


def _model_pass(store: Store, corpus: Corpus, ledger: Ledger, model: MeteredModel, pairs: Sequence[candidates.Pair],
                report: SweepReport, options: SweepOptions) -> None:
    prints = {e.id: e.fingerprint for e in corpus.entries.values()}
    for n, pair in enumerate(pairs):
        if options.progress is not None:
            options.progress(n, len(pairs))
        if not (corpus.is_active(pair.a) and corpus.is_active(pair.b)):
            report.dropped += 1  # one of them was superseded earlier in this sweep
            continue
        first, second = corpus.entries[pair.a], corpus.entries[pair.b]
        where = {"pair": [pair.a, pair.b]}
        try:
            answer = model.complete(fence.visible(build_prompt(first.memory, second.memory)), SCHEMA, purpose="curate")
            verdict = Verdict.create(answer, (pair.a, pair.b))
        except BudgetExceeded as exc:
            report.stopped = str(exc).split("\n", 1)[0]
            report.deferred = len(pairs) - n
            break
        except ModelUnavailable as exc:
            report.stopped, report.failed = str(exc), True
            report.deferred = len(pairs) - n
            break
        except (ModelError, BadVerdict) as exc:
            item = {**where, "reason": f"{type(exc).__name__}: {exc}"}
            report.skipped.append(item)
            _log_skip(store, report.sweep_id, item)
            continue
        if verdict.verdict == "unrelated":
            ledger.remember(pair.a, prints[pair.a], pair.b, prints[pair.b], verdict.verdict, report.sweep_id)
            report.unrelated += 1
            continue
        winner, loser = corpus.entries[verdict.winner], corpus.entries[verdict.loser]
        guards = check_guards(verdict, winner, loser)
        record = {"winner": verdict.winner, "loser": verdict.loser, "verdict": verdict.verdict,
                  "confidence": verdict.confidence, "guards": {g.name: g.passed for g in guards},
                  "reason": verdict.reason}
        try:
            if verdict.verdict in ACTING_VERDICTS and all(g.passed for g in guards):
                sha = apply.apply_supersession(store, verdict, guards, report.sweep_id)
                corpus.retire(verdict.loser)
                report.applied.append({**record, "commit": sha})
            else:
                review_id, sha = apply.queue_tension(store, verdict, guards, report.sweep_id)
                report.queued.append({**record, "review": review_id, "commit": sha})
        except FatalError as exc:  # e.g. a memory removed by hand while the sweep ran: nothing written
            item = {**where, "reason": f"could not record the verdict: {type(exc).__name__}: {exc}"}
            report.skipped.append(item)
            _log_skip(store, report.sweep_id, item)
            continue
        report.commits.append(sha)
        ledger.note(pair.a, pair.b, verdict.verdict)
    if options.progress is not None:
        options.progress(len(pairs), len(pairs))


def _enrich(store: Store, corpus: Corpus, ledger: Ledger, model: MeteredModel, report: SweepReport,
            options: SweepOptions) -> None:
    """The enrichment, on what the pairs left of the budget (a pass the budget stopped asks nothing)."""
    if report.stopped:
        report.enrich = enrichment.pending(store, corpus, options.focus, ledger.history).to_json()
        return
    done = enrichment.enrich_pass(store, corpus, model, report.sweep_id, focus=options.focus,
                                  history=ledger.history)
    report.enrich = done.to_json()
    report.commits.extend(item["commit"] for item in done.enriched)
    for item in done.skipped:
        _log_skip(store, report.sweep_id, {"enrich": True, **item})
    if done.stopped:
        report.stopped, report.failed = done.stopped, done.failed


def run_sweep(store: Store, model: Model | None, budget: Budget, options: SweepOptions | None = None,
              *, sweep_id: str | None = None) -> SweepReport:
    """Run the deterministic and the model pass once (see the module contract)."""
    options = options or SweepOptions()
    sweep_id = sweep_id or new_sweep_id()
    start = time.monotonic()
    name = str(getattr(model, "name", type(model).__name__)) if model is not None else "none"
    report = SweepReport(sweep_id, name, dry_run=options.dry_run,
                         budget={"max_calls": budget.max_calls, "max_chars": budget.max_chars})
    with sweep_lock(store, sweep_id, wait=options.lock_wait):
        index.ensure_fresh(store)
        corpus = load(store)
        ledger = load_ledger(store)
        active = corpus.active()
        report.memories = len(active)
        report.all_pairs = len(active) * (len(active) - 1) // 2
        _deterministic_pass(store, corpus, ledger, report, options)
        prints = {e.id: e.fingerprint for e in corpus.entries.values()}
        pairs = candidates.candidate_pairs(
            store, corpus, focus=options.focus, is_decided=lambda a, b: ledger.is_decided(a, b, prints))
        report.candidate_pairs = len(pairs)
        if options.dry_run or model is None:
            report.would_send = [p.to_json() for p in pairs]
            report.deferred = len(pairs) if model is None and not options.dry_run else 0
            if options.enrich:
                report.enrich = enrichment.pending(store, corpus, options.focus, ledger.history).to_json()
        else:
            metered = MeteredModel(model, budget, store.cache_dir / CALLS_LOG)
            try:
                try:
                    _model_pass(store, corpus, ledger, metered, pairs, report, options)
                finally:
                    report.sent = metered.summary().calls  # the pairs' calls
                if options.enrich and not report.failed:
                    _enrich(store, corpus, ledger, metered, report, options)
            finally:
                report.usage = metered.summary()._asdict()
        if report.commits:
            index.ensure_fresh(store)
    report.seconds = time.monotonic() - start
    with contextlib.suppress(OSError):
        folder = store.cache_dir / REPORTS_DIR
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{sweep_id}.json").write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    return report


# ---------------------------------------------------------------- detached per-session work


@dataclass(frozen=True)
class SessionEvent:
    """The fields of a SessionEnd or PreCompact hook event that the per-session work uses."""

    hook_event_name: str
    session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    reason: str = ""  # SessionEnd: clear|resume|logout|prompt_input_exit|other; PreCompact: the trigger

    @classmethod
    def create(cls, raw: bytes, default_name: str) -> SessionEvent | None:
        try:
            data: Any = json.loads(raw.decode("utf-8") or "{}")
        except (UnicodeDecodeError, ValueError):
            return None
        if not isinstance(data, dict):
            return None

        def text(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        return cls(text("hook_event_name") or default_name, text("session_id"), text("transcript_path"),
                   text("cwd"), text("reason") or text("trigger"))


def session_focus(store: Store, event: SessionEvent, newest: int = SESSION_NEWEST) -> frozenset[str]:
    """The memories the session touched (by their ``session`` field), else the newest ``newest``."""
    if event.session_id:
        found = index.rows(store, "SELECT id FROM memories WHERE session = ? AND status = 'active'",
                           (event.session_id,))
        if found:
            return frozenset(r["id"] for r in found)
    found = index.rows(store, "SELECT id FROM memories WHERE status = 'active'"
                              " ORDER BY created_ts DESC, id LIMIT ?", (newest,))
    return frozenset(r["id"] for r in found)


def capture_from_transcript(store: Store, event: SessionEvent, model: Model | None) -> dict[str, Any]:
    """Capture the session's memories (``quipu.capture.capture``); returns its report's JSON
    (``{"not_run": why}`` when there was nothing to capture with or from).

    The memories carry the session id, so ``session_focus`` picks them up and the small sweep
    below checks them against the store. Capture has its own budget (one call)."""
    if model is None:
        return {"not_run": "no model (--model none)"}
    if not event.session_id or not os.path.isfile(event.transcript_path or ""):
        return {"not_run": "no session id, or no transcript file"}
    from quipu.capture import capture

    report = capture.capture_session(store, event.transcript_path, event.session_id, model, capture.DEFAULT_BUDGET)
    return report.to_json()


def per_session_work(store: Store, event: SessionEvent, *, model: Model | None,
                     budget: Budget = Budget(SESSION_MAX_CALLS, SESSION_MAX_CHARS),  # noqa: B008 - an immutable tuple
                     project_root: Path | None = None, lock_wait: float = SESSION_LOCK_WAIT) -> SweepReport:
    """The bounded work after a session ends or compacts: capture (its report in the sweep's
    ``capture``), then a small focused sweep."""
    captured = capture_from_transcript(store, event, model)
    index.ensure_fresh(store)
    focus = session_focus(store, event)
    # The session's cwd is not used as a project root: the newest memories may be about other
    # projects, and a wrong root would flag live paths as dead.
    options = SweepOptions(project_root=project_root, focus=focus, lock_wait=lock_wait)
    report = run_sweep(store, model, budget, options)
    report.capture = captured
    return report


def spawn_detached(argv: Sequence[str], env: dict[str, str] | None = None) -> int:
    """Start ``argv`` in a new session with stdio on /dev/null; returns its pid without waiting."""
    proc = subprocess.Popen(
        list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True, env=env, cwd="/",
    )
    return proc.pid


def quipu_argv(*args: str) -> list[str]:
    """``quipu ARGS`` with this interpreter, isolated from the working directory (``quipu.prompt.launch``)."""
    return launch.quipu_argv(*args)


def child_env() -> dict[str, str]:
    """The environment for a detached quipu: ours (``-I`` ignores PYTHONPATH; the package's own
    folder comes with the command line)."""
    return dict(os.environ)
