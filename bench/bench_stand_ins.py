"""What each hand-written stand-in on the prompt path saves: the standard module's import beside the stand-in's.

The prompt package (quipu/prompt/) carries four stand-ins for standard modules: ``_fastjson`` for
``json``, ``_fs`` for ``os`` / ``os.path``, ``scoring.ln`` for ``math.log`` and
``indexread._lru_cache`` for ``functools.lru_cache``. Each stays only if importing the standard
module costs the hook's process more than the stand-in does. Every command runs as the hook runs,
``<real python> -I -S -c ...``, once per round in an order rotated each round:

- the bare start (``pass``), and each standard module imported and used once;
- the two quipu packages only (``import quipu.prompt``), and each stand-in imported and used once
  on top of them.

A module's cost is its cumulative ``-X importtime`` figure in that process (in-process microseconds:
far steadier on a shared machine than whole-process wall times); the saving is shown against the
bare start's wall time. Tests (tests/fastjson_test.py, tests/fs_test.py, tests/stand_ins_test.py) check each
stand-in against the standard module's answers.

Usage: python bench/bench_stand_ins.py [--rounds 80] [--write-results]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

ROOT = str(C.REPO)
PATH = f"import sys; sys.path.append({ROOT!r}); "
PAYLOAD = '{"session_id": "s", "prompt": "how do we deploy shop-api?", "cwd": "/tmp"}'
STANDARD = {
    "json": f"import json; json.loads({PAYLOAD!r})",
    "os": "import os; os.path.join(os.environ.get('HOME', '/'), 'x'); os.path.isfile('/etc/hosts')",
    "math": "import math; math.log(12345.0)",
    "functools": "import functools; functools.lru_cache(8)(len)('x')",
}
# The reference rows load quipu's two packages and the modules the hook loads anyway (vocabulary,
# stem, query; and for the LRU cache, whose module reads JSON and files, _fastjson and _fs): each
# stand-in row adds only its own module and one use of it.
CORE = PATH + "import quipu.prompt; from quipu.prompt import vocabulary, stem, query"
WITH_IO = CORE + ", _fs, _fastjson"
STAND_IN = {
    "json": ("quipu.prompt._fastjson", CORE, f"from quipu.prompt import _fastjson; _fastjson.loads({PAYLOAD!r})"),
    "os": ("quipu.prompt._fs", CORE, "from quipu.prompt import _fs; _fs.join(_fs.environ().get('HOME', '/'), 'x'); "
                                     "_fs.isfile('/etc/hosts')"),
    "math": ("quipu.prompt.scoring.ln", CORE, "from quipu.prompt import scoring; scoring.ln(12345.0)"),
    "functools": ("quipu.prompt.indexread._lru_cache", WITH_IO,
                  "from quipu.prompt import indexread; indexread._lru_cache(8)(len)('x')"),
}
REFERENCES = {CORE: "quipu's packages and the modules every prompt loads", WITH_IO: "the same, with _fs and _fastjson"}


def _import_us(code: str, module: str) -> float:
    """The cumulative import time of ``module`` (microseconds) in one ``-I -S -X importtime`` process."""
    done = subprocess.run([C.REAL_PYTHON, "-I", "-S", "-X", "importtime", "-c", code], capture_output=True,
                          text=True, timeout=60)
    if done.returncode != 0:
        raise SystemExit(f"bench: {code!r} failed: {done.stderr[-500:]}")
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == module:
            return float(parts[1])
    raise SystemExit(f"bench: {module} was not imported by {code!r}")


def run(rounds: int) -> dict[str, list[float]]:
    """Per row, the import cost of the module in question over ``rounds`` processes (microseconds)."""
    rows: dict[str, tuple[str, str]] = {}
    for name, code in STANDARD.items():
        rows[f"import {name}"] = (code, name)
    for name, (where, reference, code) in STAND_IN.items():
        module = where if where.count(".") == 2 else where.rsplit(".", 1)[0]
        rows[f"stand-in for {name}"] = (f"{reference}; {code}", module)
    times: dict[str, list[float]] = {name: [] for name in rows}
    names = list(rows)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(_import_us(*rows[name]))
    bare = [C.spawn_timed([C.REAL_PYTHON, "-I", "-S", "-c", "pass"])[0] * 1e6 for _ in range(rounds)]
    times["bare start (pass), wall"] = bare
    return times


def report(times: dict[str, list[float]]) -> str:
    p50 = {name: C.median(values) for name, values in times.items()}
    bare = p50["bare start (pass), wall"]
    rows = []
    for name, (where, _reference, _code) in STAND_IN.items():
        standard, own = p50[f"import {name}"], p50[f"stand-in for {name}"]
        verdict = "keep the stand-in" if standard > own else "use the standard module"
        rows.append([f"`{name}`", f"{standard:.0f}", f"`{where}`", f"{own:.0f}", f"{standard - own:.0f}",
                     f"{100 * (standard - own) / bare:.1f}%", verdict])
    table = C.table(["standard module", "import (us)", "stand-in", "import (us)", "saved (us)",
                     "saved, of a bare start", "verdict"], rows)
    return (f"{table}\n\nImport cost: the module's cumulative `-X importtime` figure under `-I -S` (p50 of "
            f"{len(times['bare start (pass), wall'])} processes each, in a rotated order); for a stand-in, the module "
            f"that holds it, loaded after the modules every prompt loads anyway. Bare start: {bare / 1000:.1f} ms wall "
            f"(p50), the hook's whole budget is about one of these.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=80)
    parser.add_argument("--write-results", action="store_true", help="record the figures in bench/RESULTS.md")
    args = parser.parse_args(argv)
    body = report(run(args.rounds))
    print(body)
    if args.write_results:
        C.update_results("bench_stand_ins", "Prompt-path stand-ins for standard modules (issue 14)", body,
                         command=C.command_line(), machine_line=C.machine())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
