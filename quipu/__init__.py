"""quipu: a git-native memory for Claude Code.

This package's import must stay free of third-party imports: the prompt hook imports
``quipu.recall`` and friends with nothing but the standard library on ``sys.path``.
"""
from __future__ import annotations

import os as _os

__version__ = "0.1.0"

# In a source checkout the top-level ``probes/`` folder is the ``quipu.probes`` package
# (the wheel maps it there); make that true here too without copying anything.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "probes")) and _os.path.isfile(
    _os.path.join(_root, "probes", "__init__.py")
):
    __path__.append(_root)  # type: ignore[name-defined]  # noqa: F821
