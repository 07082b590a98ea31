"""Where the installed assets are: the store template and the hook scripts.

The wheel carries the repository's ``.quipu-template/`` and ``hooks/`` as
``quipu/_assets/template`` and ``quipu/_assets/hooks``; a source checkout uses the folders at
the repository root. Both look the same to callers.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # quipu/, two folders up from quipu/store/assets.py


def _asset(installed: str, checkout: str) -> Path:
    candidate = _PACKAGE / "_assets" / installed
    if candidate.is_dir():
        return candidate
    return _PACKAGE.parent / checkout


def template_dir() -> Path:
    return _asset("template", ".quipu-template")


def hooks_dir() -> Path:
    return _asset("hooks", "hooks")
