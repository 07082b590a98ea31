"""Write quipu/store/secret_literals.py: the literal text each provider-token pattern's matches hold.

``secret_patterns.literals`` derives them from the patterns of ``secret_rules`` by reading the
regular expressions, which costs an interpreter a few milliseconds at every start that loads the
secret scanner (each ``quipu add``); the table it writes is read instead, and any pattern the
table does not know (or knows with other text) is derived at import as before.

    .venv/bin/python scripts/build_secret_literals.py          # rewrite the table
    .venv/bin/python scripts/build_secret_literals.py --check  # exit 1 when it is out of date
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from quipu.store import secret_patterns, secret_rules  # noqa: E402

TARGET = Path(__file__).resolve().parent.parent / "quipu" / "store" / "secret_literals.py"


def render() -> str:
    lines = ['"""The literals of each provider-token pattern (``secret_patterns.literals``), written by',
             "scripts/build_secret_literals.py; tests/secret_literals_test.py checks they are what it derives.",
             '"""', "LITERALS: dict[str, tuple[str, ...]] = {"]
    for pattern in secret_rules.PROVIDER_ALTERNATIVES:
        lines.append(f"    {pattern!r}: {secret_patterns.literals(pattern)!r},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TARGET.is_file() or TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is out of date: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
