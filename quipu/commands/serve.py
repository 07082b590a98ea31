"""`quipu serve`: the local viewer in the browser (see ``quipu.serve``)."""
from __future__ import annotations

import argparse
import os

from quipu.commands._common import count, open_store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "serve",
        help="review, browse and undo in the browser (local only)",
        description="Serve a viewer of the store on 127.0.0.1: the review queue side by side with a word diff, "
        "the guards and Accept / Reject; the audit log as a timeline with each commit's diff and Undo; "
        "memories with search, filters, each one's history and what the prompt hook would inject; past "
        "conversations with forget; the health checks. Each button runs what the matching command runs (one "
        "commit each). It listens on a loopback address only and prints an address carrying this run's key; "
        "every request needs that key, and changes need the page's own form key.",
    )
    p.add_argument("--port", type=count(0, 65535), default=8765, help="the port (default 8765; 0 for any free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="a loopback address to listen on (default 127.0.0.1; any other is refused)")
    p.add_argument("--open", action="store_true", help="open the viewer in the default browser")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from quipu.serve import app, guard
    from quipu.serve.state import Viewer

    guard.loopback(args.host)  # refused before anything else is read
    # One query vector against the store's: as `quipu search` (bench/bench_deep.py).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    store = open_store(args)
    try:
        app.serve(Viewer.create(store), host=args.host, port=args.port, open_browser=args.open)
    except KeyboardInterrupt:
        pass
    return 0
