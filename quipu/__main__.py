from __future__ import annotations

from quipu.cli import run

run()
