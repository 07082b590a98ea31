from __future__ import annotations

import gc

gc.disable()  # until quipu.cli.run knows the command: a one-memory command runs without it

from quipu.warm.client import run  # noqa: E402

run()
