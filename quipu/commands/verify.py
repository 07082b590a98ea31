"""`quipu verify [ID...|--all]`: check what memories claim; label the ones reality contradicts.

Reads the options, the user's ``[verify.roots]`` and ``[verify] paths`` settings and the
environment (home, model timeout, ``QUIPU_VERIFY_PATHS``), then calls ``quipu.verify.verify``
and prints a summary table, each failed or refused claim and why the unknown ones were not
checked, with the fix (or JSON). Arguments that do not go together are usage errors (exit 2).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from quipu.index import index
from quipu.prompt import locate
from quipu.store import settings
from quipu.verify.claims import DEFAULT_ROOT, ROOT_NAME
from quipu.commands._common import add_json, amount, count, open_store
from quipu.errors import FatalError, UsageError
from quipu.output import print_json, progress, table
from quipu.store.store import Store

if TYPE_CHECKING:
    from quipu.verify.claims import Extractor
    from quipu.verify.verify import Summary

LONG_RUN = 20  # claims or memories; fewer than this shows no progress bar
PATHS_ENV = "QUIPU_VERIFY_PATHS"
PATH_SCOPES = ("roots", "any")  # where absolute and ~/ paths are checked: home and the roots, or anywhere
COMMAND_MODEL = "a program that reads the request as JSON on stdin and prints the answer as JSON"
SHOWN_UNKNOWN = 5  # reasons for unknown claims printed in text; --json lists every claim


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "verify",
        help="check what memories claim (paths, branches, PRs, URLs...)",
        description="Extract the checkable claims of memories (backticked paths and URLs; with --model, "
        "typed arguments for every probe), check them, and label a memory 'unverified' when a claim "
        "fails (a commit; `quipu undo --sweep RUN` reverts a run). A later run that sees every claim "
        "hold clears the label. Claims are cached per memory content.",
    )
    p.add_argument("ids", nargs="*", metavar="ID",
                   help="memories to verify, whatever their status (a retracted or superseded one too)")
    p.add_argument("--all", action="store_true",
                   help="verify every active memory (retracted and superseded ones are left out)")
    p.add_argument("--probe", metavar="NAME", help="check only claims of this probe (e.g. path-exists)")
    p.add_argument(
        "--model",
        default="none",
        metavar="SPEC",
        help="who extracts claims: none (default: backticked paths and URLs, no model), claude, "
        f"claude:<model> or command:<command line> ({COMMAND_MODEL})",
    )
    p.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="the folder of project NAME (a memory's `project` field; 'project' for memories without one); "
        "repeatable, and settable under [verify.roots] in $QUIPU_HOME/config.toml (never in a store)",
    )
    p.add_argument(
        "--check-any-path",
        action="store_true",
        help="check absolute and ~/ paths wherever they point (default: only under your home and the project "
        f"roots, so a shared store cannot probe your machine); also {PATHS_ENV}=any or [verify] paths = \"any\" "
        "in $QUIPU_HOME/config.toml (never in a store)",
    )
    p.add_argument("--timeout", type=amount(0, 3600), default=10.0, metavar="SECONDS", help="per probe (default 10)")
    p.add_argument("--jobs", type=count(1, 256), default=4, metavar="N", help="probes run at once (default 4)")
    p.add_argument(
        "--allow-loopback", action="store_true", help="let URL probes reach 127.0.0.1 and ::1 (for tests)"
    )
    add_json(p)
    p.set_defaults(func=run)


def _root(name: str, path: str, where: str, base: Path, error: type[FatalError] = FatalError) -> tuple[str, str]:
    """A root's name and folder; ``error`` is the kind raised for a name that is not one."""
    if not ROOT_NAME.fullmatch(name) or name == "home":
        raise error(
            f"{where}: {name!r} is not a project name\n"
            "- use letters, digits, '.', '_' and '-' ('home' is reserved for your home folder)"
        )
    folder = os.path.abspath(os.path.join(base, os.path.expanduser(path)))
    if not os.path.isdir(folder):
        raise FatalError(f"{where}: {folder} is not a folder\n- give the project's folder as {name}=PATH")
    return name, folder


def store_project(store: Store) -> str | None:
    """The folder of the project a store sits in (``<project>/.quipu``): the default root of the
    relative paths its memories name, for `quipu verify` and `quipu sweep` alike."""
    if store.root.name == ".quipu" and store.root.parent.is_dir():
        return str(store.root.parent)
    return None


def project_roots(store: Store, options: list[str]) -> dict[str, str]:
    """Roots from the store location, then the user's [verify.roots], then --root (last wins)."""
    roots: dict[str, str] = {}
    project = store_project(store)
    if project is not None:
        roots[DEFAULT_ROOT] = project
    configured = settings.user_setting("verify", "roots")  # paths: never from a store
    if isinstance(configured, dict):
        for name, path in configured.items():
            if isinstance(path, str):
                key, folder = _root(str(name), path, f"{settings.user_config_path()} [verify.roots]",
                                    Path(locate.quipu_home()))
                roots[key] = folder
    for option in options:
        name, sep, path = option.partition("=")
        if not sep or not path:
            raise UsageError(f"--root {option!r}: expected NAME=PATH\n- for example --root shop=~/code/shop")
        key, folder = _root(name, path, f"--root {option}", Path.cwd(), UsageError)
        roots[key] = folder
    return roots


def any_path(flag: bool) -> bool:
    """Whether absolute and ~/ paths are checked anywhere: the flag, else the environment, else
    the user's [verify] paths (a store's quipu.toml is never asked)."""
    if flag:
        return True
    for where, value in ((PATHS_ENV, os.environ.get(PATHS_ENV)),
                         (f"{settings.user_config_path()} [verify] paths", settings.user_setting("verify", "paths"))):
        if value is None or value == "":
            continue
        if value not in PATH_SCOPES:
            raise FatalError(f"{where}: {value!r} is not a path scope\n- use one of: {', '.join(PATH_SCOPES)}")
        return value == "any"
    return False


def _extractor(spec: str, store: Store) -> Extractor:
    from quipu import model
    from quipu.verify import claims

    if spec.strip() in ("", "none"):
        return claims.DeterministicExtractor()
    timeout = float(os.environ.get(model.TIMEOUT_SETTING) or model.DEFAULT_TIMEOUT)
    from quipu.commands.sweep import refuse_scripted, use_api_key

    refuse_scripted(spec, "--model")
    try:
        backend = model.get_model(spec, timeout=timeout, use_api_key=use_api_key())
    except model.ModelError as exc:  # the spec came from --model: a usage error
        raise UsageError(str(exc)) from None
    metered = model.MeteredModel(backend, model.Budget(), store.cache_dir / "model-calls.jsonl")
    return claims.ModelExtractor(metered)


def _bar(done: int, total: int, label: str) -> None:
    if total >= LONG_RUN:
        progress(done, total, label)


def run(args: argparse.Namespace) -> int:
    from quipu.probes import PROBES
    from quipu.verify import verify as verifier

    if not args.ids and not args.all:
        raise UsageError("name the memories to verify\n- give their ids, or pass --all")
    if args.ids and args.all:
        raise UsageError("give ids or --all, not both\n- drop the ids to verify every active memory")
    if args.probe is not None and args.probe not in PROBES:
        raise UsageError(f"--probe: unknown probe {args.probe!r}\n- use one of: {', '.join(PROBES)}")
    store = open_store(args)
    options = verifier.Options(
        home=os.path.expanduser("~"),
        roots=project_roots(store, args.root),
        timeout=args.timeout,
        allow_loopback=args.allow_loopback,
        probe=args.probe,
        jobs=max(1, args.jobs),
        any_path=any_path(args.check_any_path),
    )
    summary = verifier.verify(store, _extractor(args.model, store), options, ids=args.ids or None, progress=_bar)
    if summary.commits:
        index.refresh_after_write(store)
    if args.json:
        print_json(summary.to_json())
    else:
        _print(summary)
    if summary.stopped:
        raise FatalError(f"verification stopped early: {summary.stopped}")
    return 0


def _print(summary: Summary) -> None:
    headers = [name.replace("_", "-") for name in summary.COUNTS]
    headers[1] = "claims"
    print(table([list(summary.counts().values())], headers))
    for report in summary.reports:
        if report.error:
            print(f"\n{report.id}: no claims extracted: {report.error.splitlines()[0]}")
        bad = [c for c in report.claims if c.status in ("fail", "refused")]
        if report.label or bad:
            mark = {"labelled": "labelled unverified", "cleared": "label cleared"}.get(report.label, "")
            print(f"\n{report.id}  {report.title}" + (f"  [{mark}]" if mark else ""))
            for claim in bad:
                print(f"  {claim.status:<7} {claim.probe}: {claim.detail}")
    _print_unknown(summary)
    if summary.commits:
        print(f"\nRun {summary.run}: {len(summary.commits)} commit(s); undo with `quipu undo --sweep {summary.run}`")


def _print_unknown(summary: Summary) -> None:
    """Why claims were not checked, most frequent first: each reason says what to do about it."""
    reasons: dict[str, int] = {}
    for report in summary.reports:
        for claim in report.claims:
            if claim.status == "unknown":
                reasons[claim.detail] = reasons.get(claim.detail, 0) + 1
    if not reasons:
        return
    print("\nNot checked (unknown):")
    ranked = sorted(reasons.items(), key=lambda item: -item[1])
    for detail, n in ranked[:SHOWN_UNKNOWN]:
        print(f"  {n} claim{'s' if n > 1 else ''}: {detail}")
    if len(ranked) > SHOWN_UNKNOWN:
        print(f"  and {len(ranked) - SHOWN_UNKNOWN} more reasons; --json lists every claim")
