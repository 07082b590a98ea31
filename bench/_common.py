"""Shared helpers for the benchmarks in bench/: an isolated environment, stores built in bulk,
process timing, summary statistics and the sections of bench/RESULTS.md.

Contract:
- ``isolate`` points HOME, QUIPU_HOME and git's global config at a scratch folder, so no
  benchmark reads or writes the real home, and every git/pygit2 commit has an identity.
- ``bulk_store`` creates a store with ``Store.init`` (the real template) and then adds every given
  memory in ONE commit written by ``git fast-import`` (valid files from ``render_memory``), so
  stores of 10,000 or 100,000 memories take seconds instead of minutes; ``checkout=True`` also
  writes the working tree and git's index (``git reset --hard``) so the store is exactly what
  quipu's own writer would have left. The caller then runs ``index.ensure_fresh``.
- ``spawn_timed`` runs one process with ``posix_spawn`` and ``wait4``: wall seconds, the child's
  own peak RSS, its exit status.
- ``update_results`` replaces (or appends) one marked section of bench/RESULTS.md.
- ``compile_quipu`` writes quipu's bytecode, as installing the wheel does, so a timed ``quipu``
  process is not also compiling its own source (PYTHONDONTWRITEBYTECODE may be set here).
"""
from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from quipu.store.memory import Memory  # noqa: E402
from quipu.store.store import Store  # noqa: E402
from testing.fixtures import bulk_store  # noqa: E402,F401 - the benches build their stores with it

RESULTS = REPO / "bench" / "RESULTS.md"
OUT = REPO / "bench" / "out"  # git-ignored scratch output (miss lists, kept stores)
REAL_PYTHON = os.path.realpath(sys.executable)
# Memories are dated at build time, so decay (a ranking rule) treats every synthetic memory alike.
FIXED_CREATED = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT00:00:00Z")


# ------------------------------------------------------------------ environment


def compile_quipu(python: str = sys.executable) -> None:
    subprocess.run([python, "-m", "compileall", "-q", str(REPO / "quipu")], check=True, stdout=subprocess.DEVNULL)


def isolate(scratch: Path) -> dict[str, str]:
    """Point HOME, QUIPU_HOME and git's config at ``scratch``; returns the environment."""
    home = scratch / "home"
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[init]\n\tdefaultBranch = main\n[user]\n\tname = Quipu Bench\n\temail = bench@example.invalid\n"
        "[gc]\n\tauto = 0\n"
    )
    env = {
        "HOME": str(home),
        "QUIPU_HOME": str(home / ".quipu-home"),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Quipu Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "Quipu Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    os.environ.update(env)
    for key in ("QUIPU_STORE", "QUIPU_CHILD", "XDG_DATA_HOME", "QUIPU_PROMPT_SERVER", "QUIPU_COMMAND_SERVER"):
        os.environ.pop(key, None)
    import atexit

    for kind in ("prompt", "command"):  # a hook or a command run here may have started one
        atexit.register(stop_server, env["QUIPU_HOME"], kind)
    return dict(os.environ)


def server_pid(quipu_home: str, kind: str = "prompt") -> int | None:
    """The process id of the server of ``kind`` of ``quipu_home`` (``quipu.prompt.server.pid_of``)."""
    from quipu.prompt import server

    return server.pid_of(quipu_home, kind)


def stop_server(quipu_home: str, kind: str = "prompt") -> None:
    pid = server_pid(quipu_home, kind)
    if pid is not None:
        try:
            os.kill(pid, 15)
        except OSError:
            pass


def wait_for_server(quipu_home: str, kind: str) -> None:
    """Wait (at most 30 s) until the server of ``kind`` listens."""
    import time

    from quipu.prompt import locate

    deadline = time.monotonic() + 30
    while not (os.path.exists(locate.server_socket(quipu_home, kind)) and server_pid(quipu_home, kind)):
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: the {kind} server did not start (see {quipu_home}/logs/hook.log)")
        time.sleep(0.05)


def scratch_dir(keep: str | None, name: str) -> Path:
    """A scratch folder: ``keep`` if given (kept afterwards), else a fresh temporary one."""
    if keep:
        path = Path(keep).absolute()
        path.mkdir(parents=True, exist_ok=True)
        return path
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"quipu-{name}-"))


def cleanup(path: Path, keep: str | None) -> None:
    for kind in ("prompt", "command"):  # a server of the scratch home, before its folder goes
        stop_server(str(path / "home" / ".quipu-home"), kind)
    if not keep:
        shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------ stores in bulk


def copy_store(src: Path, dst: Path) -> Store:
    shutil.copytree(src, dst, symlinks=True)
    return Store(dst)


# ------------------------------------------------------------------ synthetic text


class Corpus:
    """Deterministic pseudo-English: a Zipf-distributed vocabulary of made-up words, so
    document frequencies look like a real store's (a few very common words, a long rare tail)."""

    _ONSETS = ["b", "br", "c", "ch", "d", "dr", "f", "g", "gr", "h", "j", "k", "l", "m", "n", "p", "pl", "r", "s",
               "sh", "st", "t", "tr", "v", "w", "z"]
    _VOWELS = ["a", "e", "i", "o", "u", "ai", "ou", "ea"]
    _CODAS = ["", "", "", "n", "r", "s", "l", "m", "t", "nd", "rk"]
    _FUNCTION = ("the a of to and in is for on with that it as at by we from this be are was not or "
                 "when after before our should must use run into".split())

    def __init__(self, seed: int = 7, vocab: int = 30000) -> None:
        self.rng = random.Random(seed)
        words: dict[str, None] = {}
        while len(words) < vocab:
            n = self.rng.choice((2, 2, 3, 3, 4))
            word = "".join(self.rng.choice(self._ONSETS) + self.rng.choice(self._VOWELS) + self.rng.choice(self._CODAS)
                           for _ in range(n))
            if 5 <= len(word) <= 14:
                words.setdefault(word)
        self.words = list(words)
        weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(self.words))]
        total = 0.0
        self.cum: list[float] = []
        for w in weights:
            total += w
            self.cum.append(total)

    def word(self) -> str:
        import bisect

        return self.words[bisect.bisect_left(self.cum, self.rng.random() * self.cum[-1])]

    def rare_word(self) -> str:
        return self.words[self.rng.randrange(len(self.words) // 10, len(self.words))]

    def sentence(self, n: int) -> str:
        out = []
        for _ in range(n):
            out.append(self.rng.choice(self._FUNCTION) if self.rng.random() < 0.35 else self.word())
        return " ".join(out)

    def memory_fields(self, memory_id: str) -> tuple[dict[str, object], str]:
        title = " ".join(self.rare_word() for _ in range(self.rng.randint(3, 6))).capitalize()
        desc = self.sentence(self.rng.randint(8, 14)).capitalize()
        paragraphs = [self.sentence(self.rng.randint(15, 40)).capitalize() + "." for _ in range(self.rng.randint(2, 4))]
        fields: dict[str, object] = {
            "id": memory_id,
            "title": title,
            "description": desc,
            "class": self.rng.choice(("project-note", "reference", "rule", "event", "preference")),
            "topics": [self.rare_word() for _ in range(self.rng.randint(1, 2))],
            "origin": "user",
            "created": FIXED_CREATED,
        }
        return fields, "\n\n".join(paragraphs) + "\n"

    def memories(self, count: int, prefix: str = "") -> list[Memory]:
        out = []
        for _ in range(count):
            mid = prefix + f"{self.rng.getrandbits(48):012x}"
            fields, body = self.memory_fields(mid)
            out.append(Memory.create(fields, body))
        return out


# ------------------------------------------------------------------ timing


def spawn_timed(
    argv: Sequence[str], *, stdin: str = os.devnull, stdout: str = os.devnull, env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> tuple[float, int, int]:
    """Run one process; (wall seconds, the child's peak RSS in KiB, exit status)."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, stdin, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    if cwd:
        argv = ["/bin/sh", "-c", 'cd "$0" && exec "$@"', cwd, *argv]
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], list(argv), env if env is not None else dict(os.environ), file_actions=actions)
    _pid, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_maxrss, os.waitstatus_to_exitcode(status)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    data = sorted(values)
    if not data:
        return math.nan
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


# ------------------------------------------------------------------ reporting


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def machine() -> str:
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip().removeprefix("git version ")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "quipu", "hooks"],
                           capture_output=True, text=True).stdout.strip()
    state = f"quipu at {head}" + (" with uncommitted changes in quipu/ or hooks/" if dirty else "")
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, load average at start {load}; "
        f"Python {platform.python_version()} ({REAL_PYTHON}), SQLite {sqlite3.sqlite_version}, git {git}; {state}"
    )


def command_line() -> str:
    args = " ".join(sys.argv[1:])
    return f"python bench/{Path(sys.argv[0]).name}" + (f" {args}" if args else "")


def update_results(section: str, title: str, body: str, *, command: str, machine_line: str) -> None:
    """Replace the marked ``section`` of bench/RESULTS.md (or append it)."""
    begin, end = f"<!-- {section}:begin -->", f"<!-- {section}:end -->"
    date = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    block = (
        f"{begin}\n## {title}\n\n"
        f"- Command: `{command}`\n- Date: {date}\n- Machine: {machine_line}\n\n{body.strip()}\n{end}"
    )
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else _RESULTS_HEADER
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _old, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(text, encoding="utf-8")
    print(f"\nbench: updated the '{section}' section of {RESULTS.relative_to(REPO)}", file=sys.stderr)


_RESULTS_HEADER = """# Benchmark results

Each section below is written by one script in `bench/` (see bench/README.md), with the exact command, the
date and the machine. The machine is shared and noisy: every figure that matters is a ratio against a
baseline measured in the same run.
"""
