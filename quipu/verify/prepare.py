"""One memory's claims made ready to probe: each resolved against the run's roots, refused or kept.

Contract: ``prepare`` returns one ``Prepared`` per raw item (or fewer, with ``only``) and never
raises for what an item holds: a claim that breaks a parser, or anything else on the way, is
refused alone with the reason (and the reason logged), and the other claims go on.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from quipu.probes import PROBES, Context, ProbeResult, ProbeSpec, Refused, path_exists, run, validate_extraction
from quipu.probes.base import HOME, LogEntry
from quipu.probes.validate import refuse
from quipu.verify import claims as claims_mod

MAX_ARGS_TEXT = 2000  # of a refused claim's arguments kept for `quipu show`
_PR_STATE_PROBE = re.compile(
    r"(?:pr|pull[-_]?request)[-_](?:open|opened|closed|close|unmerged|draft|pending|state|status)", re.IGNORECASE
)


class Prepared(NamedTuple):
    """One raw claim after validation: a spec to run, or why it will not run."""

    idx: int
    probe: str
    args: str
    quote: str
    spec: ProbeSpec | None
    detail: str  # the refusal, or the fix for an unresolved root
    kind: str  # "run", "refused", "pr-state" or "unresolved"


def is_pr_state_claim(item: object) -> bool:
    """A pull request claimed in a state other than merged: a mood, not a fact."""
    if not isinstance(item, dict) or not isinstance(item.get("probe"), str):
        return False
    probe, args = item["probe"], item.get("args")
    if probe == "pr-merged":
        state = args.get("state") if isinstance(args, dict) else None
        return isinstance(state, str) and state.strip().lower() != "merged"
    return bool(_PR_STATE_PROBE.fullmatch(probe.strip()))


def _unresolved_root(item: dict[str, Any], ctx: Context) -> str | None:
    """The project root an otherwise checkable claim names but this run has no folder for."""
    args = item.get("args")
    probe = item.get("probe")
    if not isinstance(args, dict) or not isinstance(probe, str) or probe not in PROBES:
        return None
    root = args.get("root")
    if "root" not in PROBES[probe].schema or not isinstance(root, str) or root == HOME:
        return None
    if probe == "path-exists" and path_exists.is_rootless(args.get("path")):
        return None  # an absolute or ~/ path needs no project folder
    if ctx.root_path(root) is not None or not (claims_mod.ROOT_NAME.fullmatch(root) or os.path.isabs(root)):
        return None
    return root


def _args_text(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        try:
            text = ascii(value)
        except (ValueError, RecursionError):  # an integer of 5,000 digits, a nest too deep to print
            text = f"<{type(value).__name__} too large to show>"
    return text if len(text) <= MAX_ARGS_TEXT else text[: MAX_ARGS_TEXT - 3] + "..."


def _placeholder(root: str) -> str:
    """A folder that does not exist, standing in for an unresolved root during validation."""
    digest = hashlib.sha256(root.encode("utf-8", "surrogatepass")).hexdigest()
    return os.path.join(os.sep, "nonexistent", "quipu-unresolved-root", digest)


def prepare(raw_claims: Sequence[object], ctx: Context, *, only: str | None = None) -> list[Prepared]:
    """Validate each raw item; nothing here starts a process or opens a connection."""
    out: list[Prepared] = []
    for idx, raw in enumerate(raw_claims):
        try:
            prepared = _prepare_one(idx, raw, ctx, only)
        except Exception as exc:  # noqa: BLE001 - one claim nothing could read is refused; the others go on
            prepared = _unreadable(idx, raw, ctx, only, exc)
        if prepared is not None:
            out.append(prepared)
    return out


def _prepare_one(idx: int, raw: object, ctx: Context, only: str | None) -> Prepared | None:
    item: object = raw
    quote = ""
    if isinstance(raw, dict):  # the quote is ours to show, never an argument
        item = {k: v for k, v in raw.items() if k != "quote"}
        quote = claims_mod.clean_quote(raw.get("quote"))
    name = item.get("probe") if isinstance(item, dict) else None
    probe = claims_mod.clean_quote(name)[:60] or "?"
    pr_state = is_pr_state_claim(item)
    if only is not None and probe != only and not (only == "pr-merged" and pr_state):
        return None
    args = _args_text(item.get("args") if isinstance(item, dict) else item)
    root = _unresolved_root(item, ctx) if isinstance(item, dict) else None
    vctx = ctx if root is None else replace(ctx, roots={**ctx.roots, root: _placeholder(root)})
    try:
        if idx >= claims_mod.MAX_CLAIMS:
            refuse(ctx, f"more than {claims_mod.MAX_CLAIMS} claims in one memory")
        spec = validate_extraction(item, vctx)
        if pr_state:  # the probe set refuses it already; a mood is never run, whatever the probes say
            refuse(ctx, "a pull request is checked only as merged")
    except Refused as exc:
        return Prepared(idx, probe, args, quote, None, exc.reason, "pr-state" if pr_state else "refused")
    args = _args_text(dict(spec.args))
    if root is None:
        return Prepared(idx, spec.probe, args, quote, spec, "", "run")
    fix = f"project root {root!r} has no folder in this run: pass --root {root}=PATH"
    if os.path.isabs(root):
        fix = (f"project folder {root} is not checked: it does not exist here, or it is outside your "
               "home and your verify roots (--check-any-path checks it)")
    return Prepared(idx, spec.probe, args, quote, None, fix, "unresolved")


def _unreadable(idx: int, raw: object, ctx: Context, only: str | None, exc: Exception) -> Prepared | None:
    """The refusal of a claim that broke something on its way to validation."""
    name = raw.get("probe") if isinstance(raw, dict) else None
    probe = claims_mod.clean_quote(name)[:60] or "?"
    if only is not None and probe != only:
        return None
    quote = claims_mod.clean_quote(raw.get("quote")) if isinstance(raw, dict) else ""
    said = claims_mod.clean_quote(str(exc))[:120]
    reason = f"the claim could not be read ({type(exc).__name__}{': ' + said if said else ''})"
    with contextlib.suppress(Exception):
        ctx.record(LogEntry("refused", reason))
    return Prepared(idx, probe, _args_text(raw.get("args") if isinstance(raw, dict) else raw), quote, None,
                    reason, "refused")


def check_claim(spec: ProbeSpec, ctx: Context) -> ProbeResult:
    try:
        return run(spec, ctx)
    except Exception as exc:  # noqa: BLE001 - one broken probe must not end the run
        return ProbeResult("unknown", f"the probe crashed: {type(exc).__name__}: {str(exc)[:160]}")
