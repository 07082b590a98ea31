"""The structural gate a drafted skill passes before it is admitted to the drafts folder.

Contract: ``check(draft, candidate, context)`` returns every reason to refuse (``[]`` admits).
No model takes part; each check is one function below, and a refused draft is kept with its
reasons (``quipu.skills.queue``). ``check_loading`` reads the SKILL.md as Claude Code would load
it: a shell command it runs (``!`` and a command in backticks, or a fenced block opened with
three backticks and ``!``), a file it reads in (``@path``) or a frontmatter field beyond a name
and a description is refused, with what it would do; ``quipu.skills.promote`` runs it again on
the text the store holds.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from quipu.capture import gates
from quipu.store import secrets_scan
from quipu.skills.detect import MIN_SESSIONS, Candidate

# Length is a hump: compact (+19 points) and standard (+21.5) skills helped most, detailed ones
# less (+14.5) and comprehensive ones not at all (+0.7). The figures give no sizes, so the bounds
# are quipu's reading of "compact to standard": at least enough for a procedure and the failure it
# prevents (MIN_BODY_CHARS), at most about one screen (MAX_BODY_CHARS, MAX_BODY_LINES), well under
# the 5,000 tokens Claude Code re-attaches per skill after compaction.
MIN_BODY_CHARS = 200
MAX_BODY_CHARS = 2500
MAX_BODY_LINES = 60
# A promoted skill's description enters every session's context (the listing is truncated at
# 1,536 characters and shares about 1% of the window with every other skill): one or two sentences.
MAX_DESCRIPTION_CHARS = 300
MIN_QUOTED_FAILURE = 12  # a failure named by fewer characters is not one error
NAME = re.compile(r"\A[a-z0-9]+(?:-[a-z0-9]+)*\Z")
MAX_NAME = 64

# Claude Code's own slash commands (claude-code.md, "Skills" and the commands table): a skill of
# one of these names would hide or be hidden by the built-in.
BUILTIN_COMMANDS = frozenset("""
add-dir agents bashes bug clear compact config context cost doctor exit export feedback help hooks ide init
install-github-app login logout mcp memory migrate-installer model output-style permissions plugin pr-comments
privacy-settings release-notes resume review rewind sandbox security-review status statusline terminal-setup
todos upgrade usage vim skills agents-md batch debug simplify loop claude-api fast files keybindings btw plan
""".split())

_UNVERIFIABLE = re.compile(
    r"(?i)\bsaves?\s+(you\s+)?(a\s+lot\s+of\s+)?(time|effort|hours|minutes)\b|\bfaster\b|\bmore\s+efficient"
    r"|\befficien(cy|tly)\b|\bproductiv|\bbest\s+practices?\b|\balways\s+works\b|\bguarantee|\bboost"
    r"|\bstreamlin|\bseamless|\beffortless|\bsignificantly\b|\b10x\b")
_CODE_BLOCK = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_INLINE = re.compile(r"`([^`\n]+)`")
_PROSE_PATH = re.compile(r"(?<![\w<`])((?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]+)*)")
_PLACEHOLDER = re.compile(r"<[^>]*>|\{[^}]*\}|\$\{?[A-Za-z_]|\b[A-Z][A-Z0-9_]{2,}\b")
_SHELL_WORDS = frozenset("cd export echo set unset source . test [ [[ true false exit return if then else fi for do "
                         "done while case esac read printf pwd alias type command eval exec wait trap".split())
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

# What Claude Code acts on when it loads a SKILL.md, before a model reads a word of it (its skills
# documentation, "Inject dynamic context"): `` !`command` `` and a fenced block opened with ```! run
# shell commands and put their output in place. Its preprocessor reads the file as plain text, so
# a code span or a code block does not shelter either form. ``@path`` reads a file into the skill,
# as in CLAUDE.md (resolved from the project's root; anthropics/claude-code#57595).
_SHELL_INLINE = re.compile(r"!`+[^`\n]*`*")
_SHELL_BLOCK = re.compile(r"(?:`{3,}|~{3,})[ \t]*![^\n]*")
_INCLUDE = re.compile(r"(?<![\w@])@[\w~./-]\S*")
# Frontmatter fields Claude Code reads, beyond the name and the description quipu writes, and what
# each would change. A draft holds those two only, so any other field is refused, these with why.
FRONTMATTER_EFFECTS = {
    "allowed-tools": "lets the skill use those tools without asking",
    "disallowed-tools": "changes which tools the skill may use",
    "hooks": "runs commands on the skill's tool events",
    "model": "runs the skill on another model",
    "effort": "changes the model's effort while the skill runs",
    "context": "runs the skill in another context (`context: fork`: a sub-agent)",
    "agent": "runs the skill as a sub-agent of that type",
    "shell": "chooses the shell its commands run in",
    "disable-model-invocation": "changes who may start the skill",
    "user-invocable": "changes who may start the skill",
    "paths": "loads the skill by itself when files of those paths are touched",
    "argument-hint": "makes the skill take arguments",
    "arguments": "makes the skill take arguments",
    "when_to_use": "adds text to every session's skill listing",
}
_YAML_WORDS = frozenset("true false yes no on off null y n".split())


@dataclass(frozen=True)
class Draft:
    name: str
    description: str
    failure: str  # the error, quoted from the sessions, that the procedure resolved
    body: str

    def skill_md(self) -> str:
        return f"---\nname: {self.name}\ndescription: {yaml_text(self.description)}\n---\n\n{self.body.strip()}\n"


@dataclass(frozen=True)
class Context:
    """Where the gate looks: folders relative paths are judged against, skills that exist already."""

    roots: tuple[Path, ...] = ()
    existing_skills: frozenset[str] = field(default=frozenset())
    path_env: str | None = None  # PATH to resolve commands on (default: the process's)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _plain_yaml(value: str) -> bool:
    """Whether YAML reads ``value``, written bare after ``key: ``, as that very text: it starts
    with a letter (no indicator, quote, number or tag), holds no ``: `` or `` #`` and is no word
    YAML reads as true, false or null."""
    return (bool(re.match(r"[A-Za-z]", value)) and ": " not in value and " #" not in value
            and not value.endswith(":") and value.lower() not in _YAML_WORDS)


def yaml_text(text: str) -> str:
    """``text`` on one line as a YAML value that reads back as that text: bare when it can be,
    else double-quoted (JSON's escapes are YAML's)."""
    one = _one_line(text)
    return one if _plain_yaml(one) else json.dumps(one, ensure_ascii=False)


def yaml_value(raw: str) -> str | None:
    """The text a frontmatter value written by ``yaml_text`` stands for; None for any other form."""
    if raw.startswith('"'):
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, str) else None
    return raw if _plain_yaml(raw) else None


def split_skill_md(text: str) -> tuple[list[tuple[str, str]], str] | None:
    """A SKILL.md's frontmatter lines as (key, value) in order, and its body; None without a
    frontmatter. A line that is not ``key: value`` is kept whole as a key, so it is refused."""
    head, sep, body = text.removeprefix("---\n").partition("\n---\n")
    if not text.startswith("---\n") or not sep:
        return None
    return [(k, v) for k, _, v in (line.partition(": ") for line in head.splitlines() if line.strip())], body


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("`", "").replace('"', "").replace("'", "").split())


def skill_dirs(roots: Iterable[Path]) -> list[Path]:
    """Folders Claude Code loads skills or commands from, for the user and for each root."""
    from quipu.claude.settings import claude_dir

    home = claude_dir()
    out = [home / "skills", home / "commands"]
    for root in roots:
        out += [root / ".claude" / "skills", root / ".claude" / "commands"]
    return out


def existing_skill_names(roots: Iterable[Path]) -> frozenset[str]:
    names: set[str] = set()
    for folder in skill_dirs(roots):
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        names.update(e.name.removesuffix(".md") for e in entries)
    return frozenset(names)


# ------------------------------------------------------------------------------------ the checks

def check_sessions(candidate: Candidate) -> str | None:
    n = len(set(candidate.sessions))
    return None if n >= MIN_SESSIONS else f"seen in {n} session(s); a skill needs {MIN_SESSIONS} or more"


def check_failure(draft: Draft, candidate: Candidate) -> str | None:
    named = _norm(draft.failure)
    if len(named) < MIN_QUOTED_FAILURE:
        return "names no concrete failure it prevents (quote an error from the sessions)"
    seen = [_norm(f) for f in candidate.failures]
    if not any(named in f or (len(f) >= MIN_QUOTED_FAILURE and f in named) for f in seen):
        return f"the failure {draft.failure[:80]!r} was not found in the sessions it came from"
    return None


def check_name(draft: Draft, context: Context) -> str | None:
    if not NAME.match(draft.name) or len(draft.name) > MAX_NAME:
        return f"name {draft.name!r} is not lowercase words joined by hyphens (at most {MAX_NAME} characters)"
    if draft.name in BUILTIN_COMMANDS:
        return f"name {draft.name!r} shadows Claude Code's built-in /{draft.name} command"
    if draft.name in context.existing_skills:
        return f"name {draft.name!r} shadows an existing skill or command"
    return None


def check_length(draft: Draft) -> str | None:
    body = draft.body.strip()
    lines = body.count("\n") + 1
    if len(body) < MIN_BODY_CHARS:
        return f"body of {len(body)} characters is under {MIN_BODY_CHARS}: too short to hold a procedure"
    if len(body) > MAX_BODY_CHARS or lines > MAX_BODY_LINES:
        return (f"body of {len(body)} characters / {lines} lines passes the compact-to-standard limit "
                f"({MAX_BODY_CHARS} characters, {MAX_BODY_LINES} lines)")
    if not draft.description.strip() or len(_one_line(draft.description)) > MAX_DESCRIPTION_CHARS:
        return f"description must be 1 to {MAX_DESCRIPTION_CHARS} characters"
    return None


def check_claims(draft: Draft) -> str | None:
    m = _UNVERIFIABLE.search(f"{draft.description}\n{draft.body}")
    return f"unverifiable claim {' '.join(m.group(0).split())!r}: name the failure instead" if m else None


def check_safety(draft: Draft) -> str | None:
    text = f"{draft.description}\n{draft.body}"
    hit = gates.safeguard_hit(text)  # one reading of what weakens a safeguard, shared with the always-on layer
    if hit:
        return f"tells the agent to weaken a safeguard: {hit!r}"
    m = gates._INJECTION.search(text)  # the capture gate's pattern: text that addresses the agent's rules
    if m:
        return f"text that instructs the agent: {' '.join(m.group(0).split())!r}"
    spans = secrets_scan.find_secrets(f"{draft.name}\n{draft.description}\n{draft.failure}\n{draft.body}")
    if spans:
        return f"looks like it holds a secret ({', '.join(sorted({s.kind for s in spans}))})"
    return None


def _cut(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def check_loading(text: str) -> str | None:
    """What Claude Code would do with the SKILL.md ``text`` as it loads it, before a model reads
    it: run a shell command, read a file in, or take a frontmatter field beyond a name and a
    description. Each finding says what it would do."""
    found: list[str] = []
    runs = [_cut(m.group(0)) for pattern in (_SHELL_BLOCK, _SHELL_INLINE) for m in pattern.finditer(text)]
    if runs:
        found.append("runs a shell command when the skill loads, before any model reads it (`!` then a "
                     f"command in backticks, or a ```! block, even inside code): {', '.join(map(repr, runs[:3]))}")
    includes = [_cut(m.group(0).rstrip(".,;:)]'\"`")) for m in _INCLUDE.finditer(text)]
    if includes:
        found.append("reads a file into the skill when it loads (`@path`, resolved from the project's root): "
                     + ", ".join(map(repr, includes[:3])))
    parts = split_skill_md(text)
    if parts is None:
        found.append("has no frontmatter of a name and a description")
    else:
        extra: list[str] = []
        for key, value in parts[0]:
            if key == "name":
                continue  # a skill name, checked against the folder's by whoever reads it
            if key == "description":
                if yaml_value(value) is None:
                    found.append(f"the frontmatter's description is not plain text to YAML: {_cut(value)!r}")
                continue
            if key[:1].isspace() or key.startswith("-"):  # part of the field above it
                if not extra:
                    extra.append(f"an indented line {_cut(key.strip(), 40)!r}")
                continue
            field_name = key.partition(":")[0].strip(" \t?").lower()
            why = ("is not written as one line of plain text" if field_name in ("name", "description")
                   else FRONTMATTER_EFFECTS.get(field_name, "is not a field quipu writes"))
            extra.append(f"`{_cut(field_name, 40)}` {why}")
        if extra:
            found.append(f"frontmatter: {'; '.join(extra)} (a draft holds a name and a description only)")
        keys = [k for k, _ in parts[0]]
        if keys.count("name") != 1 or keys.count("description") != 1:
            found.append("frontmatter must hold one name and one description")
    return "; ".join(found) or None


def _snippets(body: str) -> list[tuple[str, bool]]:
    """Code lines (each a shell line) and inline spans, each with whether it came from a block."""
    lines = [(line.strip(), True) for block in _CODE_BLOCK.findall(body) for line in block.splitlines()]
    inline = [(span.strip(), False) for span in _INLINE.findall(_CODE_BLOCK.sub("", body))]
    return [(s.removeprefix("$ ").strip(), b) for s, b in lines + inline if s and not s.startswith("#")]


def _path_exists(token: str, roots: tuple[Path, ...]) -> bool:
    token = token.rstrip(".,:;)")
    path = Path(os.path.expanduser(token))
    if path.is_absolute():
        return path.exists()
    return any((root / path).exists() for root in roots)


def _is_pathlike(token: str) -> bool:
    return ("/" in token or token.startswith("~")) and not token.startswith(("http:", "https:"))


def cited(body: str) -> tuple[list[str], list[str]]:
    """The commands and the paths ``body`` cites (placeholders such as ``<file>`` left out).

    A line of a code block, or an inline span of more than one word, is a shell line: its first
    word is a command (or a path, when it has a slash). Any other word with a slash is a path."""
    commands: list[str] = []
    paths: list[str] = []
    for snippet, in_block in _snippets(body):
        for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", snippet):
            tokens = [t for t in part.split() if not _ASSIGN.match(t)]
            if not tokens:
                continue
            head = tokens[0]
            shell_line = in_block or len(tokens) > 1
            if _PLACEHOLDER.search(head) or head.startswith("-"):
                pass
            elif _is_pathlike(head):
                paths.append(head)
            elif shell_line:
                commands.append(head)
            paths += [t for t in tokens[1:] if _is_pathlike(t) and not _PLACEHOLDER.search(t)]
    prose = _INLINE.sub("", _CODE_BLOCK.sub("", body))
    paths += [p for p in _PROSE_PATH.findall(prose) if not _PLACEHOLDER.search(p)]
    return list(dict.fromkeys(commands)), list(dict.fromkeys(paths))


def check_cited(draft: Draft, candidate: Candidate, context: Context) -> str | None:
    roots = context.roots or tuple(Path(p) for p in candidate.projects)
    commands, paths = cited(draft.body)
    missing_commands = [c for c in commands if c not in _SHELL_WORDS
                        and shutil.which(c, path=context.path_env) is None]
    missing_paths = [p for p in paths if not _path_exists(p, roots)]
    problems = []
    if missing_commands:
        problems.append(f"command(s) not on PATH: {', '.join(missing_commands[:5])}")
    if missing_paths:
        problems.append(f"path(s) that do not exist: {', '.join(missing_paths[:5])}")
    return "; ".join(problems) or None


def check(draft: Draft, candidate: Candidate, context: Context) -> list[str]:
    """Every reason to refuse ``draft`` (``[]`` admits it)."""
    found = [check_sessions(candidate), check_failure(draft, candidate), check_name(draft, context),
             check_length(draft), check_claims(draft), check_safety(draft), check_loading(draft.skill_md()),
             check_cited(draft, candidate, context)]
    return [r for r in found if r]
