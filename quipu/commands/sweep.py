"""`quipu sweep`: run the curator once (deterministic pass, then the guarded model pass).

Relative paths in memories are judged under ``--project-root``, else under the project the store
sits in (``<project>/.quipu``, as `quipu verify` does); with neither, the sweep says how many it
could not judge.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from quipu.store import settings
from quipu.commands._common import add_json, count, open_store
from quipu.commands.verify import store_project
from quipu.errors import FatalError, UsageError
from quipu.model import DEFAULT_TIMEOUT, TIMEOUT_SETTING, Budget, Model, get_model
from quipu.output import print_json, progress
from quipu.store.store import Store
from quipu.curate.sweep import DEFAULT_MAX_CALLS, DEFAULT_MAX_CHARS, SweepOptions, SweepReport, run_sweep


def add_model_options(
    p: argparse.ArgumentParser, *, calls: int, chars: int, store_project_default: bool = False
) -> None:
    p.add_argument("--model", metavar="SPEC",
                   help="claude (default), claude:<model> or command:<command line> (a program that reads the "
                        "request as JSON on stdin and prints the answer as JSON); for `quipu sweep` also none (the "
                        "deterministic pass only) (default: $QUIPU_MODEL, else [sweep] model in "
                        "$QUIPU_HOME/config.toml, else claude; never a store's setting)")
    p.add_argument("--max-calls", type=count(), metavar="N",
                   help=f"at most N model calls in this run (default {calls}; 0 for no limit)")
    p.add_argument("--max-chars", type=count(), metavar="N",
                   help=f"at most N characters sent to the model in this run (default {chars:,}; 0 for no limit)")
    default = " (default: the project the store sits in, for a store in <project>/.quipu)"
    p.add_argument("--project-root", metavar="PATH",
                   help="judge relative paths in memories without a project folder against PATH"
                        + (default if store_project_default else ""))


def project_root(args: argparse.Namespace, store: Store) -> Path | None:
    """The root relative paths in memories are judged against: --project-root, else the project
    the store sits in (``<project>/.quipu``), else none."""
    root = Path(args.project_root).expanduser().resolve() if args.project_root else None
    if root is not None and not root.is_dir():
        raise FatalError(f"--project-root {args.project_root} is not a folder\n- pass the root of the project the memories are about")
    if root is None and (project := store_project(store)) is not None:
        root = Path(project)
    return root


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "sweep",
        help="find duplicates, dead paths and outdated memories (the curator)",
        description="Run the curator once: a deterministic pass (byte-identical duplicates, memories naming "
        "paths that no longer exist) and a model pass over related pairs. A supersession is applied only "
        "when all four guards pass (confidence >= 0.75, two shared topics or entities, same class, full "
        "scope); other tensions go to `quipu review`. Then, on what is left of the budget, it asks for "
        "aliases (the words a person would type to find a memory) of memories that have none, each "
        "memory's aliases a commit of its own. Every decision is a commit; undo the whole run with "
        "`quipu undo --sweep ID`. Meant to run daily (see docs/schedule.md).",
    )
    add_model_options(p, calls=DEFAULT_MAX_CALLS, chars=DEFAULT_MAX_CHARS, store_project_default=True)
    p.add_argument("--dry-run", action="store_true",
                   help="ask no model and change nothing: list the findings and the pairs that would be sent")
    p.add_argument("--no-enrich", action="store_true",
                   help="do not ask for aliases of memories that have none (default: ask, unless [sweep] "
                        "enrich = false in $QUIPU_HOME/config.toml)")
    p.add_argument("--quiet", action="store_true", help="print nothing unless something fails")
    add_json(p)
    p.set_defaults(func=run)


def _setting(store: Store, key: str) -> Any:
    """A [sweep] setting: what runs and how much it is sent come from the user, never the store."""
    if key == "model" and os.environ.get(settings.MODEL_ENV):
        return os.environ[settings.MODEL_ENV]
    return settings.user_setting("sweep", key)


def _limit(flag: int | None, store: Store, key: str, default: int) -> int | None:
    value = flag if flag is not None else _setting(store, key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        value = default
    return value or None  # 0 means no limit


def model_spec(spec: str | None, store: Store) -> str:
    """The model the offline pass would use: --model, $QUIPU_MODEL, [sweep] model, else claude."""
    return str(spec or _setting(store, "model") or "claude")


def make_model(spec: str | None, store: Store) -> Model:
    chosen = model_spec(spec, store)
    try:
        timeout = float(os.environ.get(TIMEOUT_SETTING) or DEFAULT_TIMEOUT)
    except ValueError:
        raise FatalError(f"{TIMEOUT_SETTING} must be a number of seconds\n- fix or unset it") from None
    return get_model(str(chosen), timeout=timeout, use_api_key=use_api_key())


def refuse_scripted(spec: str, where: str) -> None:
    """The scripted model answers only what a Python caller queued (tests): from the command line it has none."""
    if spec.strip() == "scripted":
        kind = UsageError if where.startswith("--") else FatalError
        raise kind(f"{where}: the scripted model answers only from Python (quipu's tests); it has no "
                         "answers on the command line\n- to script the answers, use command:<command line>: a "
                         "program that reads the request as JSON on stdin and prints the answer as JSON")


def use_api_key() -> bool:
    """The user's opt-in (their config.toml only, never a store's) to run the offline pass on ANTHROPIC_API_KEY."""
    return settings.user_setting("sweep", "use_api_key") is True


def make_budget(args: argparse.Namespace, store: Store, calls: int, chars: int) -> Budget:
    return Budget(_limit(args.max_calls, store, "max_calls", calls), _limit(args.max_chars, store, "max_chars", chars))


def _limit_text(value: int | None, unit: str) -> str:
    return f"{value:,} {unit}" if value is not None else f"no {unit} limit"


def print_report(report: SweepReport) -> None:
    data = report.to_json()
    pairs = data["pairs"]
    print(f"Sweep {report.sweep_id} (model {report.model}{', dry run' if report.dry_run else ''}): "
          f"{report.memories:,} memories, {report.seconds:.1f} s")
    kinds: dict[str, int] = {}
    for finding in report.findings:
        kinds[finding["kind"]] = kinds.get(finding["kind"], 0) + 1
    found = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "nothing"
    left = data["left_alone"]["taken_back"]
    print(f"  deterministic pass: {found}" + (" (labelled and queued for review)" if kinds and not report.dry_run else "")
          + (f"; {left} left alone (a person took them back)" if left else ""))
    print(f"  pairs: {pairs['candidates']:,} candidates of {pairs['all']:,} possible; {pairs['sent']} sent, "
          f"{pairs['applied']} applied, {pairs['queued']} queued for review, {pairs['unrelated']} unrelated, "
          f"{pairs['skipped']} skipped, " + (f"{pairs['dropped']} dropped (a member was superseded), " if pairs["dropped"] else "")
          + f"{pairs['deferred']} left for the next sweep")
    usage = report.usage or {}
    print(f"  model: {usage.get('calls', 0)} calls, {usage.get('chars_sent', 0):,} characters sent "
          f"(budget: {_limit_text(report.budget.get('max_calls'), 'calls')}, "
          f"{_limit_text(report.budget.get('max_chars'), 'characters')})")
    if report.enrich:
        e = report.enrich
        print(f"  aliases: {e['wanting']:,} memories have none; {len(e['enriched'])} enriched, {e['without']} asked "
              f"with nothing kept, {len(e['skipped'])} skipped, {e['deferred']:,} left for the next sweep")
    for item in report.findings:
        print(f"  {item['kind']}: {item['memory']} {item['detail']}" + (f"  [review {item['review']}]" if "review" in item else ""))
    for item in report.applied:
        print(f"  applied: {item['loser']} superseded by {item['winner']} ({item['verdict']}, "
              f"confidence {item['confidence']:.2f})  [commit {item['commit'][:12]}]")
    for item in report.queued:
        failed = [name for name, ok in item["guards"].items() if not ok]
        why = f"guards failed: {', '.join(failed)}" if failed else item["verdict"]
        print(f"  queued: {item['loser']} vs {item['winner']} ({item['verdict']}, {why})  [review {item['review']}]")
    for item in report.skipped:
        print(f"  skipped: {' / '.join(item['pair'])}: {item['reason']}")
    for item in (report.enrich or {}).get("skipped", []):
        print(f"  aliases skipped: {item.get('memory') or ', '.join(item.get('memories', []))}: {item['reason']}")
    if report.dry_run:
        for pair in report.would_send[:20]:
            print(f"  would send: {pair['a']} / {pair['b']} (shared: {', '.join(pair['shared']) or '-'})")
    if report.stopped:
        print(f"  stopped: {report.stopped.splitlines()[0]}")
    if report.queued or (report.findings and not report.dry_run):
        print("Review queued items with `quipu review`.")
    if report.commits:
        print(f"Undo this sweep with `quipu undo --sweep {report.sweep_id}`.")


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    deterministic_only = (args.model or _setting(store, "model")) == "none"
    if not (args.dry_run or deterministic_only):
        refuse_scripted(model_spec(args.model, store), "--model" if args.model else "$QUIPU_MODEL or [sweep] model")
    model = None if args.dry_run or deterministic_only else make_model(args.model, store)
    budget = make_budget(args, store, DEFAULT_MAX_CALLS, DEFAULT_MAX_CHARS)
    root = project_root(args, store)
    show = (lambda done, total: progress(done, total, "sweep")) if not (args.json or args.quiet) else None
    enrich = not args.no_enrich and _setting(store, "enrich") is not False
    report = run_sweep(store, model, budget, SweepOptions(project_root=root, dry_run=args.dry_run, progress=show,
                                                          enrich=enrich))
    unjudged = unjudged_paths(store, root)
    if args.json:
        print_json({**report.to_json(), "unjudged_paths": unjudged})
    elif not args.quiet:
        print_report(report)
        if unjudged["paths"]:
            n, m = unjudged["paths"], unjudged["memories"]
            print(f"  dead paths: {n} relative path{'s' if n > 1 else ''} in {m} memor{'ies' if m > 1 else 'y'} not "
                  "judged: no project folder is known for them (pass --project-root PATH, or give each memory "
                  "its project folder with --project)")
    if report.failed:
        print(f"quipu: error: the model pass stopped: {report.stopped}", file=sys.stderr)
        return 1
    return 0


def unjudged_paths(store: Store, root: Path | None) -> dict[str, int]:
    """Relative paths the dead-path pass could not judge: their memory has no project folder here
    and the sweep no root (counts of paths and memories)."""
    if root is not None:
        return {"paths": 0, "memories": 0}
    from quipu.curate.corpus import load
    from quipu.curate.deterministic import path_tokens
    from quipu.probes.extract import said_removed

    paths = memories = 0
    for entry in load(store).active():
        project = os.path.expanduser(entry.memory.project or "")
        if "dead-path" in entry.labels or (os.path.isabs(project) and os.path.isdir(project)):
            continue  # flagged already, or judged under its own folder
        body = entry.memory.body
        relative = [t for t in path_tokens(body) if not t.startswith(("/", "~/")) and not said_removed(body, t)]
        paths += len(relative)
        memories += bool(relative)
    return {"paths": paths, "memories": memories}
