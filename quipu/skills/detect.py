"""Procedures that recur in past sessions, counted in the history index: no model.

Contract:
- A step is one tool call of an assistant turn, as the archive keeps it (``[Tool: command or
  path]``), normalised: a shell command is split at ``&&``, ``||``, ``;`` and ``|``; each part keeps
  its program and its sub-command, flags keep their name, and paths, numbers and other values
  become ``<path>``, ``<n>`` and ``<arg>``; any other tool is its name, with ``<path>`` when it
  names one. So the same procedure run on other files, with other values, is the same steps.
- A procedure is a run of 2 to ``MAX_STEPS`` consecutive steps of one assistant turn with at least
  one shell command in it (reading and editing files alone is not a procedure).
- Counting is over a temporary table of (procedure, session, turn id, time); the turn id is the
  message uuid of the turn's key and its time, which Claude Code copies unchanged into the new
  session file a ``--resume`` or ``--continue`` writes. One SQL query keeps the procedures of at least
  ``MIN_SESSIONS`` distinct sessions and turns; then a session counts only with a turn of its own
  (``distinct_sessions``: the most sessions that each hold an occurrence no other counted session
  shares), so a session and two resumed copies of it are one session, while a resumed session
  that repeats the procedure in new turns counts. A procedure is a candidate when that count
  reaches ``MIN_SESSIONS``; candidates are ranked by it, then by distinct turns, then by the last
  time seen. A candidate contained in a longer candidate seen in as many sessions is dropped (the
  longer one says more).
- Failures: the error text (``error_texts``) of the prompt before each occurrence and of the
  occurrence's own turn: each sentence's message from its first error marker (``error:``,
  ``SomethingError``, ``Traceback``...) or from the program name of a ``prog: ...: not found``
  line, to the sentence's end, secrets redacted; the words around it are never kept. The archive
  keeps no tool output, so an error counts when a person pasted it or the reply quoted it.
"""
from __future__ import annotations

import hashlib
import itertools
import re
import shlex
import sqlite3
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from quipu.errors import FatalError

MIN_SESSIONS = 3  # the article's rule: a procedure repeated in three or more separate sessions
MAX_STEPS = 4
MAX_FAILURES = 5  # error messages kept per candidate (what the model is shown, what the gate accepts)
MAX_FAILURE_CHARS = 240
_SHELL_TOOLS = frozenset({"Bash", "BashOutput", "PowerShell"})
_STEP_LINE = re.compile(r"^\[([A-Za-z][\w.-]*)(?:: (.*))?\]$")
_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WORD = re.compile(r"^[A-Za-z][\w.:+-]{0,39}$")
_SUB = re.compile(r"^[a-z][a-z-]{1,15}$")
_NUMBER = re.compile(r"^[+-]?\d[\d.]*$")
# A marker that opens an error message, as tools print one: the message runs from it.
_ERROR_HEAD = re.compile(r"\b(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b|\b(?i:error|fatal)(?:\[\w+\])?:"
                         r"|\bTraceback\b|\bFAILED\b")
# A marker that ends one (``cp: x: No such file or directory``): the message is kept from the
# program's name when a ``word: `` chain leads to it, or from the marker when it opens the part.
_ERROR_TAIL = re.compile(r"\bfailed\b|\bnot found\b|\bNo such file\b|\b[Pp]ermission denied\b"
                         r"|\bexit (?:code|status) [1-9]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_CHAIN = re.compile(r"(?:^|(?<=[`'\"(]))(?:[^\s`'\"(]+: )+")  # at the start, or where a pasted span opens


@dataclass(frozen=True)
class Occurrence:
    session: str
    turn: int
    ts: str
    project: str


@dataclass(frozen=True)
class Candidate:
    """One procedure seen in ``len(sessions)`` distinct sessions, each with a turn of its own."""

    steps: tuple[str, ...]
    sessions: tuple[str, ...]  # distinct, most recent first
    occurrences: tuple[Occurrence, ...] = ()
    last_seen: str = ""
    failures: tuple[str, ...] = ()  # error messages found around the occurrences (``error_texts``)
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


def _error_in(sentence: str) -> str | None:
    head = _ERROR_HEAD.search(sentence)
    if head:
        return _message(sentence, head.start())
    for tail in _ERROR_TAIL.finditer(sentence):
        before = sentence[:tail.start()]
        part = before.rfind(": ") + 2 if ": " in before else 0
        if part == tail.start():  # the marker opens its part: `...: No such file or directory`
            return _message(sentence, part)
        chain = next((m for m in _CHAIN.finditer(sentence, 0, part) if m.end() == part), None) if part else None
        if chain:  # `bash: foo: command not found`, from the program's name
            return _message(sentence, chain.start())
    return None


def _message(sentence: str, start: int) -> str:
    """The message from ``start`` to the end of the sentence, or of the code span or quotation it
    was pasted in."""
    if sentence.count("`", 0, start) % 2:
        close = sentence.find("`", start)
    elif start and sentence[start - 1] in "\"'":
        close = sentence.find(sentence[start - 1], start)
    else:
        close = -1
    return sentence[start:close if close >= 0 else None]


def error_texts(text: str) -> list[str]:
    """The error messages of ``text`` (see the module contract), at most ``MAX_FAILURE_CHARS``
    each, secrets redacted: what a person pasted or a reply quoted, never the words around it."""
    from quipu.store import secrets_scan

    out = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line or _STEP_LINE.match(line) or not (_ERROR_HEAD.search(line) or _ERROR_TAIL.search(line)):
            continue
        line = secrets_scan.redact(line)  # before it is cut, so no secret is cut past recognising
        for sentence in _SENTENCE.split(line):
            found = _error_in(sentence)
            if found and found[:MAX_FAILURE_CHARS] not in out:
                out.append(found[:MAX_FAILURE_CHARS])
    return out


def turn_id(key: str, session: str, ts: str) -> str:
    """What a resumed session's copy of a turn shares with the turn, and no other turn does: its
    key without the session's id (the uuid of its first message, or a hash of its time and text)
    and the time of that message. A copy repeats both; the time keeps apart the turns of ids that
    are numbered per session rather than unique."""
    own = key[len(session) + 1:] if key.startswith(session + "/") else key
    return f"{own}\n{ts}"


def distinct_sessions(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The most sessions that each hold a turn no other of them holds, from (session, turn id)
    pairs, each with that turn (session -> turn id). A maximum matching, found by augmenting paths,
    so the count does not depend on which copy of a resumed session is read first."""
    turns_of: dict[str, list[str]] = {}
    for session, turn in pairs:
        if turn not in turns_of.setdefault(session, []):
            turns_of[session].append(turn)
    owner: dict[str, str] = {}  # turn -> the session it counts for
    held: dict[str, str] = {}  # session -> its turn
    for first in sorted(turns_of, key=lambda s: (len(turns_of[s]), s)):
        reached: dict[str, str] = {}  # turn -> the session it was reached from
        queue, visited = deque([first]), {first}
        free: str | None = None
        while queue and free is None:
            session = queue.popleft()
            for turn in turns_of[session]:
                if turn in reached:
                    continue
                reached[turn] = session
                other = owner.get(turn)
                if other is None:
                    free = turn
                    break
                if other not in visited:
                    visited.add(other)
                    queue.append(other)
        while free is not None:  # each turn on the path goes to the session that reached it
            session = reached[free]
            given_up = held.get(session)  # None for ``first``, which held nothing yet
            owner[free], held[session] = session, free
            free = given_up
    return held


def _contains(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    n = len(shorter)
    return len(longer) > n and any(longer[i:i + n] == shorter for i in range(len(longer) - n + 1))


def detect(db: sqlite3.Connection, *, min_sessions: int = MIN_SESSIONS, limit: int | None = None) -> list[Candidate]:
    """Candidates from an open history index (``quipu.history.index.connect``); see the contract."""
    min_sessions = max(min_sessions, MIN_SESSIONS)  # fewer than three sessions is never a candidate
    db.execute("DROP TABLE IF EXISTS temp.skill_steps")
    db.execute("CREATE TEMP TABLE skill_steps(sig TEXT, session TEXT, turn INTEGER, turn_id TEXT, ts TEXT, "
               "project TEXT)")
    rows = db.execute("SELECT key, session, turn, ts, project, text FROM turns WHERE role = 'assistant' "
                      "AND instr(text, '[') > 0")
    db.executemany("INSERT INTO skill_steps VALUES (?, ?, ?, ?, ?, ?)",
                   (("\n".join(p), s, t, turn_id(k, s, ts), ts, project)
                    for k, s, t, ts, project, text in rows for p in procedures(text)))
    pairs = db.execute(
        "SELECT sig, session, turn_id, max(ts) FROM skill_steps WHERE sig IN (SELECT sig FROM skill_steps "
        "GROUP BY sig HAVING count(DISTINCT session) >= ? AND count(DISTINCT turn_id) >= ?) "
        "GROUP BY sig, session, turn_id ORDER BY sig", (min_sessions, min_sessions)).fetchall()
    counted: dict[str, dict[str, str]] = {}
    ranked: list[tuple[str, int, int, str]] = []  # sig, sessions, distinct turns, last seen
    for sig, group in itertools.groupby(pairs, key=lambda row: str(row[0])):
        found = [(str(s), str(t), str(ts)) for _sig, s, t, ts in group]
        held = distinct_sessions((s, t) for s, t, _ts in found)
        if len(held) >= min_sessions:
            counted[sig] = held
            ranked.append((sig, len(held), len({t for _s, t, _ts in found}), max(ts for _s, _t, ts in found)))
    ranked.sort(key=lambda r: r[0])
    ranked.sort(key=lambda r: r[3], reverse=True)
    ranked.sort(key=lambda r: (-r[1], -r[2]))
    kept: list[tuple[tuple[str, ...], int]] = []
    for sig, sessions, _times, _last in ranked:
        steps = tuple(sig.split("\n"))
        if not any(n >= sessions and _contains(longer, steps) for longer, n in kept):
            kept.append((steps, sessions))
    kept = [(s, n) for s, n in kept if not any(m >= n and _contains(longer, s) for longer, m in kept)]
    out = [_candidate(db, steps, counted["\n".join(steps)]) for steps, _ in kept]
    return out[:limit] if limit else out


def _candidate(db: sqlite3.Connection, steps: tuple[str, ...], held: dict[str, str]) -> Candidate:
    """The candidate of ``steps``: one occurrence per distinct turn, in the session it counts for
    (``held``) when it counts for one; the sessions counted, most recent first."""
    rows = db.execute("SELECT session, turn, turn_id, ts, project FROM skill_steps WHERE sig = ? "
                      "ORDER BY ts DESC, session", ("\n".join(steps),)).fetchall()
    owner = {t: s for s, t in held.items()}
    chosen: dict[str, tuple[int, Occurrence]] = {}  # turn id -> (preference, occurrence)
    for s, t, tid, ts, p in rows:
        rank = 0 if owner.get(str(tid)) == s else 1 if s in held else 2
        if str(tid) not in chosen or rank < chosen[str(tid)][0]:
            chosen[str(tid)] = (rank, Occurrence(str(s), int(t), str(ts), str(p)))
    occurrences = tuple(sorted((o for _rank, o in chosen.values()), key=lambda o: o.session))
    occurrences = tuple(sorted(occurrences, key=lambda o: o.ts, reverse=True))
    sessions = tuple(dict.fromkeys(o.session for o in occurrences if o.session in held))
    failures: list[str] = []
    for o in occurrences:
        texts = db.execute("SELECT text FROM turns WHERE session = ? AND turn IN (?, ?) ORDER BY turn",
                           (o.session, o.turn - 1, o.turn)).fetchall()
        for (text,) in texts:
            failures.extend(f for f in error_texts(text) if f not in failures)
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

