from __future__ import annotations

from quipu.cli import main

raise SystemExit(main())
