"""`quipu verify [ID...|--all]`: check what memories claim; label the ones reality contradicts.

Reads the options, the user's ``[verify.roots]`` and ``[verify] paths`` settings and the
environment (home, model timeout, ``QUIPU_VERIFY_PATHS``), then calls ``quipu.verify.verify``
and prints a summary table (or JSON).
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
from quipu.errors import FatalError
from quipu.output import print_json, progress, table
from quipu.store.store import Store

if TYPE_CHECKING:
    from quipu.verify.claims import Extractor
    from quipu.verify.verify import Summary

LONG_RUN = 20  # claims or memories; fewer than this shows no progress bar
PATHS_ENV = "QUIPU_VERIFY_PATHS"
PATH_SCOPES = ("roots", "any")  # where absolute and ~/ paths are checked: home and the roots, or anywhere


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "verify",
        help="check what memories claim (paths, branches, PRs, URLs...)",
        description="Extract the checkable claims of memories (backticked paths and URLs; with --model, "
        "typed arguments for every probe), check them, and label a memory 'unverified' when a claim "
        "fails (a commit; `quipu undo --sweep RUN` reverts a run). A later run that sees every claim "
        "hold clears the label. Claims are cached per memory content.",
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="memories to verify")
    p.add_argument("--all", action="store_true", help="verify every active memory")
    p.add_argument("--probe", metavar="NAME", help="check only claims of this probe (e.g. path-exists)")
    p.add_argument(
        "--model",
        default="none",
        metavar="SPEC",
        help="who extracts claims: none (default: backticked paths and URLs, no model), claude, "
        "claude:<model>, scripted or command:<command line>",
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


def _root(name: str, path: str, where: str, base: Path) -> tuple[str, str]:
    if not ROOT_NAME.fullmatch(name) or name == "home":
        raise FatalError(
            f"{where}: {name!r} is not a project name\n"
            "- use letters, digits, '.', '_' and '-' ('home' is reserved for your home folder)"
        )
    folder = os.path.abspath(os.path.join(base, os.path.expanduser(path)))
    if not os.path.isdir(folder):
        raise FatalError(f"{where}: {folder} is not a folder\n- give the project's folder as {name}=PATH")
    return name, folder


def project_roots(store: Store, options: list[str]) -> dict[str, str]:
    """Roots from the store location, then the user's [verify.roots], then --root (last wins)."""
    roots: dict[str, str] = {}
    if store.root.name == ".quipu" and store.root.parent.is_dir():  # a store inside a project
        roots[DEFAULT_ROOT] = str(store.root.parent)
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
            raise FatalError(f"--root {option!r}: expected NAME=PATH\n- for example --root shop=~/code/shop")
        key, folder = _root(name, path, f"--root {option}", Path.cwd())
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
    from quipu.commands.sweep import use_api_key

    backend = model.get_model(spec, timeout=timeout, use_api_key=use_api_key())
    metered = model.MeteredModel(backend, model.Budget(), store.cache_dir / "model-calls.jsonl")
    return claims.ModelExtractor(metered)


def _bar(done: int, total: int, label: str) -> None:
    if total >= LONG_RUN:
        progress(done, total, label)


def run(args: argparse.Namespace) -> int:
    from quipu.verify import verify as verifier

    if not args.ids and not args.all:
        raise FatalError("name the memories to verify\n- give their ids, or pass --all")
    if args.ids and args.all:
        raise FatalError("give ids or --all, not both\n- drop the ids to verify every memory")
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
    if summary.commits:
        print(f"\nRun {summary.run}: {len(summary.commits)} commit(s); undo with `quipu undo --sweep {summary.run}`")
