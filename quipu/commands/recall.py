"""`quipu recall PROMPT`: the prompt hook's recall, from the command line, with --explain."""
from __future__ import annotations

import argparse
import os
import re
import sqlite3
from collections import Counter
from collections.abc import Callable

from quipu.index import index
from quipu.prompt import recall
from quipu.prompt import inject
from quipu.prompt import indexread
from quipu.prompt import locate
from quipu.prompt import transcript
from quipu.commands._common import add_json, count, open_stores
from quipu.output import print_json
from quipu.store.store import Store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "recall",
        help="run the prompt hook's recall on a prompt",
        description="Run exactly the recall the UserPromptSubmit hook runs, and show what it would inject.",
    )
    p.add_argument("prompt", help="the prompt text")
    p.add_argument("--transcript", metavar="FILE", help="a Claude Code transcript whose tail gives context")
    p.add_argument("--explain", action="store_true", help="show terms, document frequencies, scores and exclusions")
    p.add_argument("--limit", type=count(), help="at most this many memories (default from quipu.toml)")
    add_json(p)
    p.set_defaults(func=run)


SHOWN_LEFT_OUT = 5


def _left_out_lines(left_out: list[str]) -> list[str]:
    """The best few left-out memories one per line, the rest counted by reason (``--json`` lists each)."""
    lines = [f"Left out {line}" for line in left_out[:SHOWN_LEFT_OUT]]
    rest = left_out[SHOWN_LEFT_OUT:]
    if rest:
        reasons = Counter(re.sub(r"^score [-0-9.]+ ", "", line.split(": ", 1)[-1]) for line in rest)
        counted = "; ".join(f"{n} {reason}" for reason, n in reasons.most_common())
        lines.append(f"Left out {len(rest)} more: {counted} (`--json` lists each)")
    return lines


def run(args: argparse.Namespace) -> int:
    stores = open_stores(args)
    context = ""
    if args.transcript:
        previous, assistant = transcript.read_tail(args.transcript, args.prompt)
        context = f"{previous}\n{assistant}"

    cwd = os.getcwd()

    def reader(store: Store) -> Callable[[sqlite3.Connection], tuple[recall.Options, recall.Recall]]:
        def run_recall(db: sqlite3.Connection) -> tuple[recall.Options, recall.Recall]:
            options = recall.Options.from_config(indexread.index_config(db), limit=args.limit, cwd=cwd,
                                                 own_store=locate.serves(str(store.root.absolute()), cwd))
            if transcript.is_machine_text(args.prompt):
                return options, recall.Recall(reason="machine text (task notification, hook output, slash command...)")
            return options, recall.recall(db, args.prompt, context, options)
        return run_recall

    answers = [(store.layer, *index.query(store, reader(store))) for store in stores]
    options = answers[0][1]  # the first store's settings bound the answer, as in the hook
    result = recall.merge([(label, r) for label, _o, r in answers], options.limit)
    text = inject.format_context(result.hits, options.max_chars)
    if args.json:
        print_json({**result.to_json(), "context": text})
        return 0
    if args.explain:
        print("Prompt terms (document frequency; * = finds candidates; everyday = never a topic alone):")
        for term, df, chosen in result.terms:
            kind = "  everyday" if term in result.generic else ""
            print(f"  {'*' if chosen else ' '} {term}  df={df}{kind}")
        if result.files:
            named = ", ".join(f"{name} (named by {df})" for name, df in result.files)
            print(f"Files the prompt names (a memory of this project naming one speaks): {named}")
        if result.context_terms:
            print(f"Context terms (may sharpen, never lead): {', '.join(result.context_terms)}")
        for hit in result.hits:
            where = f" ({hit.store} store)" if hit.store else ""
            print(f"Hit {hit.id}{where}: bm25 {hit.bm25:.2f} -> score {hit.score:.2f}; matched {', '.join(hit.matched)}")
        for line in _left_out_lines(result.left_out):
            print(line)
        if result.reason:
            print(f"Why nothing: {result.reason}" if not result.hits else f"Note: {result.reason}")
        if not locate.switched_on(os.environ, locate.RECALL_SWITCH):
            print(f"Note: {locate.RECALL_SWITCH} is off here, so the prompt hook of a session started from this "
                  "environment injects nothing; unset it to turn recall back on")
        print()
    print(text if text else "(silent: nothing would be injected)")
    return 0
