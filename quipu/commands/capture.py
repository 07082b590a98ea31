"""`quipu capture`: propose, gate and commit the memories of one session transcript."""
from __future__ import annotations

import argparse
import os

from quipu.capture import capture
from quipu.commands._common import add_json, count, open_store
from quipu.errors import FatalError
from quipu.commands.sweep import make_model
from quipu.model import Budget, Model
from quipu.output import print_json
from quipu.store.store import Store


def add_model_options(p: argparse.ArgumentParser, *, max_calls: int, max_chars: int) -> None:
    p.add_argument("--model", metavar="SPEC",
                   help="the offline model: claude, claude:<model> or command:<command line> "
                        "(default: $QUIPU_MODEL, else [sweep] model in $QUIPU_HOME/config.toml, else claude)")
    p.add_argument("--max-calls", type=count(), default=max_calls, metavar="N",
                   help=f"never make more than N model calls (default {max_calls}; 0 for no limit)")
    p.add_argument("--max-chars", type=count(), default=max_chars, metavar="N",
                   help=f"never send the model more than N characters (default {max_chars:,}; 0 for no limit)")


def model_and_budget(args: argparse.Namespace, store: Store) -> tuple[Model, Budget]:
    """The model named by --model (else the user's ``[sweep] model``, else claude) and the budget."""
    return make_model(args.model, store), Budget(max_calls=args.max_calls or None, max_chars=args.max_chars or None)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "capture",
        help="capture the memories of a session transcript",
        description="Read a Claude Code transcript (human prompts and assistant text only), ask the offline "
        "model for candidate memories, and commit those that pass the capture gates (declarative, durable, "
        "held at the end of the session, no secrets, no instructions), each tagged with the session id. "
        "Refusals are logged, redacted, to <store>/.cache/capture.log.",
    )
    p.add_argument("--transcript", required=True, metavar="FILE", help="the session's JSONL transcript")
    p.add_argument("--session", required=True, metavar="ID", help="the session id to tag the memories with")
    add_model_options(p, max_calls=capture.DEFAULT_BUDGET.max_calls or 1,
                      max_chars=capture.DEFAULT_BUDGET.max_chars or 0)
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    if not os.path.isfile(args.transcript):
        raise FatalError(f"no transcript at {args.transcript}\n- pass the path of a session's .jsonl file")
    model, budget = model_and_budget(args, store)
    report = capture.capture_session(store, args.transcript, args.session, model, budget)
    if args.json:
        print_json(report.to_json())
    else:
        print(f"Session {report.session}: {report.turns} turn(s), {report.chars_sent:,} characters sent, "
              f"{report.candidates} candidate(s)")
        for mid in report.captured:
            print(f"  captured {mid}")
        for mid in report.facts:
            print(f"  fact     {mid}")
        for entry in report.profile:
            print(f"  profile  {entry}")
        for title in report.skipped:
            of = report.duplicate_of.get(title)
            print(f"  skipped  {title} " + (f"(near-identical to {of}, already in the store)" if of
                                            else "(already captured from this session)"))
        for gate, excerpt in report.refused:
            print(f"  refused  [{gate}] {excerpt}")
        if report.error:
            print(f"  error    {report.error}")
    if report.error:
        raise FatalError(f"capture failed: {report.error}\n- check the model (`--model`), then run capture again")
    return 0
