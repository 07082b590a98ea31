"""`quipu mcp`: serve the memory to an agent over the Model Context Protocol (stdio)."""
from __future__ import annotations

import argparse
import os


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "mcp",
        help="serve the memory to an agent over MCP (stdio)",
        description="Run an MCP server on stdin/stdout for Claude Code or another agent: search_memory, "
        "get_memory, remember (through the same gates as capture; one commit each, naming this server's "
        "session) and propose_supersession (queued for `quipu review`, never applied); search_history and "
        "show_history too when past conversations are archived. Answers are fenced as reference data and "
        "bounded in size. The store is found from --store, $QUIPU_STORE, then $CLAUDE_PROJECT_DIR (or the "
        "working directory) as usual. `quipu install claude` registers it.",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from quipu.mcp import server as mcp_server

    return mcp_server.serve(args.store, os.environ.get("CLAUDE_PROJECT_DIR") or None)
