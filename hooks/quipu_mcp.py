"""Start quipu's MCP server (``quipu mcp``) for Claude Code, on stdin/stdout.

Run as ``python -I quipu_mcp.py`` (``quipu install claude``) or ``python3
"${CLAUDE_PLUGIN_ROOT}/hooks/quipu_mcp.py"`` (the plugin's ``.mcp.json``). quipu is looked for
beside this file first (a source checkout used as a plugin, or an installed wheel, where this
file is ``quipu/_assets/hooks/quipu_mcp.py``), then in the interpreter's own packages, and last as
a ``quipu`` executable on PATH. Unlike the hooks it does not fail silently: a server that cannot
start says why on stderr, which Claude Code shows in ``/mcp``.
"""
from __future__ import annotations

import os
import shutil
import sys


def _package_parent() -> str | None:
    here = os.path.dirname(os.path.abspath(__file__))
    for _ in range(4):
        if os.path.isfile(os.path.join(here, "quipu", "cli.py")):
            return here
        here = os.path.dirname(here)
    return None


def main() -> int:
    parent = _package_parent()
    if parent is not None and parent not in sys.path:
        sys.path.insert(0, parent)
    try:
        from quipu import cli  # noqa: F401 - the SDK and quipu's dependencies, or none
        from quipu.mcp import server as mcp_server  # noqa: F401 - importable, or refuse
        cli.check_dependencies(load=False)  # and what its tools load at their first write, not loaded yet
    except ImportError as exc:
        exe = shutil.which("quipu")
        if exe is None:
            print(f"quipu mcp: {sys.executable} cannot import quipu ({exc}) and no quipu is on PATH\n"
                  "- install quipu as a tool from a clone of its repository (pipx install ./quipu), "
                  "so that `quipu` is on PATH", file=sys.stderr)
            return 1
        os.execv(exe, [exe, "mcp"])
    return cli.main(["mcp"])


if __name__ == "__main__":
    sys.exit(main())
