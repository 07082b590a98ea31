"""Procedures that recur in past sessions, counted in the history index: no model.

Contract:
- A step is one tool call of an assistant turn, as the archive keeps it (``[Tool: command or
  path]``), normalised: a shell command is split at ``&&``, ``||``, ``;`` and ``|``; each part keeps
  its program and its sub-command, flags keep their name, and paths, numbers and other values
  become ``<path>``, ``<n>`` and ``<arg>``; any other tool is its name, with ``<path>`` when it
  names one. So the same procedure run on other files, with other values, is the same steps.
- A procedure is a run of 2 to ``MAX_STEPS`` consecutive steps of one assistant turn with at least
  one shell command in it (reading and editing files alone is not a procedure).
- Counting is one SQL query over a temporary table of (procedure, session, time): a procedure is
  a candidate when it occurs in at least ``MIN_SESSIONS`` distinct sessions; candidates are
  ranked by sessions, then occurrences, then the last time seen. A candidate contained in a longer
  candidate seen in as many sessions is dropped (the longer one says more).
- Failures: the error lines (``FAILURE``) of the prompt before each occurrence and of the
  occurrence's own turn. The archive keeps no tool output, so an error counts when a person
  pasted it or the reply quoted it.
"""
from __future__ import annotations

import hashlib
import re
import shlex
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from quipu.errors import FatalError

MIN_SESSIONS = 3  # the article's rule: a procedure repeated in three or more separate sessions
MAX_STEPS = 4
MAX_FAILURES = 5  # error lines kept per candidate (what the model is shown, what the gate accepts)
MAX_FAILURE_CHARS = 240
_SHELL_TOOLS = frozenset({"Bash", "BashOutput", "PowerShell"})
_STEP_LINE = re.compile(r"^\[([A-Za-z][\w.-]*)(?:: (.*))?\]$")
_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WORD = re.compile(r"^[A-Za-z][\w.:+-]{0,39}$")
_SUB = re.compile(r"^[a-z][a-z-]{1,15}$")
_NUMBER = re.compile(r"^[+-]?\d[\d.]*$")
FAILURE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\b(?i:error|fatal)(?:\[\w+\])?:|\bTraceback\b|\bFAILED\b|\bfailed\b"
    r"|\bnot found\b|\bNo such file\b|\b[Pp]ermission denied\b|\bexit (?:code|status) [1-9]")


@dataclass(frozen=True)
class Occurrence:
    session: str
    turn: int
    ts: str
    project: str


@dataclass(frozen=True)
class Candidate:
    """One procedure seen in ``len(sessions)`` distinct sessions."""

    steps: tuple[str, ...]
    sessions: tuple[str, ...]  # distinct, most recent first
    occurrences: tuple[Occurrence, ...] = ()
    last_seen: str = ""
    failures: tuple[str, ...] = ()  # error lines found around the occurrences
    projects: tuple[str, ...] = field(default=())

    @property
    def id(self) -> str:
        return hashlib.sha256("\n".join(self.steps).encode("utf-8")).hexdigest()[:12]

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "steps": list(self.steps), "sessions": list(self.sessions),
                "session_count": len(self.sessions), "occurrences": len(self.occurrences),
                "last_seen": self.last_seen, "projects": list(self.projects), "failures": list(self.failures),
                "refs": [f"{o.session}:{o.turn}" for o in self.occurrences]}


def _value(token: str) -> str:
    if token.startswith("-"):
        name, eq, _ = token.partition("=")
        return name + ("=<arg>" if eq else "")
    if "/" in token or token.startswith(("~", ".")) or re.search(r"\.\w{1,5}$", token):
        return "<path>"
    if _NUMBER.match(token):
        return "<n>"
    return "<arg>"


def normalise_command(command: str) -> list[str]:
    """A shell command line as steps (see the module contract)."""
    command = command.rstrip("…").strip()
    steps = []
    for part in _SPLIT.split(command):
        if "'" in part or '"' in part or "\\" in part:
            try:
                tokens = shlex.split(part)
            except ValueError:
                tokens = part.split()
        else:
            tokens = part.split()  # what shlex gives for a line without quotes, at a tenth of the cost
        while tokens and _ASSIGN.match(tokens[0]):
            tokens.pop(0)
        if not tokens:
            continue
        out = [tokens[0]]
        for i, token in enumerate(tokens[1:], start=1):
            word = i == 1 and bool(_WORD.match(token))  # the sub-command: `git commit`, `npm run`
            if i == 2 and (out[-1] in ("run", "exec", "-m") or out[-1] == tokens[1]) and _SUB.match(token):
                word = True  # a script, a module or a sub-sub-command: `npm run build`, `git stash pop`
            value = token if word else _value(token)
            if value == "<arg>" and out[-1] == "<arg>":
                continue
            out.append(value)
        steps.append(" ".join(out))
    return steps


def steps_of(text: str) -> list[tuple[str, bool]]:
    """The normalised steps of one assistant turn, each with whether it is a shell command."""
    steps: list[tuple[str, bool]] = []
    for line in text.splitlines():
        m = _STEP_LINE.match(line.strip())
        if not m:
            continue
        tool, arg = m.group(1), (m.group(2) or "").strip()
        if tool in _SHELL_TOOLS and arg:
            steps.extend((s, True) for s in normalise_command(arg))
        else:
            steps.append((f"{tool} <path>" if arg and ("/" in arg or "." in arg) else tool, False))
    return steps


def procedures(text: str) -> Iterator[tuple[str, ...]]:
    """Every run of 2 to MAX_STEPS consecutive steps with a shell command, once each."""
    steps = steps_of(text)
    seen: set[tuple[str, ...]] = set()
    for n in range(2, MAX_STEPS + 1):
        for start in range(len(steps) - n + 1):
            run = steps[start:start + n]
            names = tuple(s for s, _ in run)
            if any(shell for _, shell in run) and len(set(names)) > 1 and names not in seen:
                seen.add(names)
                yield names


def failure_lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if line and not _STEP_LINE.match(line) and FAILURE.search(line):
            out.append(line[:MAX_FAILURE_CHARS])
    return out


def _contains(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    n = len(shorter)
    return len(longer) > n and any(longer[i:i + n] == shorter for i in range(len(longer) - n + 1))


def detect(db: sqlite3.Connection, *, min_sessions: int = MIN_SESSIONS, limit: int | None = None) -> list[Candidate]:
    """Candidates from an open history index (``quipu.history.index.connect``); see the contract."""
    min_sessions = max(min_sessions, MIN_SESSIONS)  # fewer than three sessions is never a candidate
    db.execute("CREATE TEMP TABLE IF NOT EXISTS skill_steps(sig TEXT, session TEXT, turn INTEGER, ts TEXT, project TEXT)")
    db.execute("DELETE FROM skill_steps")
    rows = db.execute("SELECT session, turn, ts, project, text FROM turns WHERE role = 'assistant' "
                      "AND instr(text, '[') > 0")
    db.executemany("INSERT INTO skill_steps VALUES (?, ?, ?, ?, ?)",
                   (("\n".join(p), s, t, ts, project) for s, t, ts, project, text in rows for p in procedures(text)))
    found = db.execute(
        "SELECT sig, count(DISTINCT session) AS sessions, count(*) AS times, max(ts) AS last FROM skill_steps "
        "GROUP BY sig HAVING sessions >= ? ORDER BY sessions DESC, times DESC, last DESC, sig", (min_sessions,)).fetchall()
    kept: list[tuple[tuple[str, ...], int]] = []
    for sig, sessions, _times, _last in found:
        steps = tuple(sig.split("\n"))
        if not any(n >= sessions and _contains(longer, steps) for longer, n in kept):
            kept.append((steps, sessions))
    kept = [(s, n) for s, n in kept if not any(m >= n and _contains(longer, s) for longer, m in kept)]
    out = [_candidate(db, steps) for steps, _ in kept]
    return out[:limit] if limit else out


def _candidate(db: sqlite3.Connection, steps: tuple[str, ...]) -> Candidate:
    rows = db.execute("SELECT session, turn, ts, project FROM skill_steps WHERE sig = ? ORDER BY ts DESC, session",
                      ("\n".join(steps),)).fetchall()
    occurrences = tuple(Occurrence(str(s), int(t), str(ts), str(p)) for s, t, ts, p in rows)
    sessions = tuple(dict.fromkeys(o.session for o in occurrences))
    failures: list[str] = []
    for o in occurrences:
        texts = db.execute("SELECT text FROM turns WHERE session = ? AND turn IN (?, ?) ORDER BY turn",
                           (o.session, o.turn - 1, o.turn)).fetchall()
        for (text,) in texts:
            failures.extend(f for f in failure_lines(text) if f not in failures)
    projects = tuple(dict.fromkeys(o.project for o in occurrences if o.project))
    return Candidate(steps, sessions, occurrences, occurrences[0].ts if occurrences else "",
                     tuple(failures[:MAX_FAILURES]), projects)


def open_index(path: Path) -> sqlite3.Connection:
    from quipu.history.archive import Layout
    from quipu.history.index import connect, is_current

    if not is_current(Layout(path.parent)):
        raise FatalError(f"no past-conversation index at {path}\n- run `quipu history index` first")
    return connect(path)


def find_candidates(path: Path, *, min_sessions: int = MIN_SESSIONS) -> list[Candidate]:
    db = open_index(path)
    try:
        return detect(db, min_sessions=min_sessions)
    finally:
        db.close()

