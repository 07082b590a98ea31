"""quipu: a git-native memory for Claude Code.

This package's import must stay free of third-party imports (and of ``os``): the prompt hook
imports ``quipu.recall`` and friends with nothing but the standard library on ``sys.path``.
"""
from quipu import _fs

__version__ = "0.1.0"

# In a source checkout the top-level ``probes/`` folder is the ``quipu.probes`` package
# (the wheel maps it there); make that true here too without copying anything.
_here = _fs.dirname(_fs.abspath(__file__))
_root = _fs.dirname(_here)
if not _fs.isdir(_fs.join(_here, "probes")) and _fs.isfile(_fs.join(_root, "probes", "__init__.py")):
    __path__.append(_root)  # type: ignore[name-defined]  # noqa: F821
