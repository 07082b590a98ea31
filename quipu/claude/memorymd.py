"""Claude Code's MEMORY.md load limit: where the index is, how much of it loads, what falls off.

Claude Code loads its auto-memory index ``MEMORY.md`` only up to 200 lines or 25,000 bytes,
whichever comes first, and drops the rest at whole lines (a tail cut); entries are appended at
the bottom, so the newest memories are the first to go.

Contract:
- ``measure(text)`` strips what Claude Code strips before measuring (a leading YAML frontmatter
  block and block-level HTML comments, never inside code fences), then finds the cut: a line is
  loaded when it is among the first ``max_lines`` lines and its terminating newline falls at or
  before byte ``max_bytes`` of the stripped text. Bytes are UTF-8 bytes; Claude Code may count
  UTF-16 code units instead, which are never more than the bytes, so this errs on the safe side.
- Every reported line number is a line number of the original file, and every line past the
  cut is named with the markdown section (nearest heading above it) it belongs to.
- ``auto_memory_index(cwd)`` is ``<autoMemoryDirectory>/MEMORY.md`` when Claude Code's settings
  name one, else ``<claude dir>/projects/<project>/memory/MEMORY.md``, where
  ``<project>`` is the main git work tree's path (shared by all worktrees; the directory itself
  outside git) with every character other than ASCII letters and digits replaced by ``-``.
- ``parse_entries(text)`` reads the entries of an index for ``quipu import memory-md``, and
  ``topic_link(folder, link)`` where an entry's link leads: a local file in the index's folder,
  one outside it (and why), or none (a URL).
- Only the standard library is used; nothing here raises for a finding.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quipu.claude.settings import claude_dir

MAX_LINES = 200
MAX_BYTES = 25_000
BEFORE_FIRST_HEADING = "(before the first heading)"

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_COMMENT_START = re.compile(r"^ {0,3}<!--")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, in the original file
    text: str
    section: str  # the nearest heading above, as written (with its #'s)
    section_line: int  # that heading's line number; 0 before the first heading
    code: bool = False  # inside a fenced code block
    size: int = 0  # bytes on disk, without the newline (a carriage return counts)


@dataclass(frozen=True)
class SectionCut:
    heading: str
    line: int
    lines_cut: int
    lines_total: int

    @property
    def whole(self) -> bool:
        return self.lines_cut == self.lines_total


@dataclass(frozen=True)
class Measure:
    path: str
    lines: int  # after stripping frontmatter and comments
    bytes: int
    max_lines: int
    max_bytes: int
    loaded_lines: int
    loaded_bytes: int
    cut_by: str | None  # "lines", "bytes" or None
    cut: list[Line] = field(default_factory=list)
    sections: list[SectionCut] = field(default_factory=list)
    stripped_lines: int = 0

    @property
    def over(self) -> bool:
        return bool(self.cut)

    @property
    def cut_bytes(self) -> int:
        return self.bytes - self.loaded_bytes

    def summary(self) -> str:
        size = f"{self.lines} lines, {self.bytes:,} bytes"
        limit = f"the {self.max_lines}-line / {self.max_bytes:,}-byte load limit"
        if not self.over:
            return f"{size}: within {limit} ({self.max_lines - self.lines} lines, {self.max_bytes - self.bytes:,} bytes to spare)"
        first, last = self.cut[0].number, self.cut[-1].number
        share = 100 * len(self.cut) / max(self.lines, 1)
        return (
            f"{size}: over {limit}; cut by {self.cut_by} after line {first - 1}: "
            f"lines {first}-{last} ({len(self.cut)} lines, {self.cut_bytes:,} bytes, {share:.0f}%) never load"
        )

    def details(self, max_lines: int = 12) -> list[str]:
        out = []
        for section in self.sections:
            where = f"line {section.line}" if section.line else "top of file"
            what = "all" if section.whole else f"{section.lines_cut} of"
            out.append(f"section {section.heading} ({where}): {what} {section.lines_total} lines past the cut")
        shown = [line for line in self.cut if line.text.strip()][:max_lines]
        for line in shown:
            out.append(f"line {line.number}: {line.text.strip()[:100]}")
        rest = sum(1 for line in self.cut if line.text.strip()) - len(shown)
        if rest > 0:
            out.append(f"... and {rest} more lines past the cut")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "lines": self.lines,
            "bytes": self.bytes,
            "max_lines": self.max_lines,
            "max_bytes": self.max_bytes,
            "loaded_lines": self.loaded_lines,
            "loaded_bytes": self.loaded_bytes,
            "stripped_lines": self.stripped_lines,
            "over": self.over,
            "cut_by": self.cut_by,
            "cut_lines": [{"line": x.number, "text": x.text, "section": x.section} for x in self.cut],
            "sections": [
                {"heading": s.heading, "line": s.line, "lines_cut": s.lines_cut, "lines_total": s.lines_total}
                for s in self.sections
            ],
        }


# ---------------------------------------------------------------- parsing


def loaded_lines(text: str) -> tuple[list[Line], int]:
    """The lines Claude Code measures, with their original numbers and sections; and how many were stripped."""
    if text.startswith("\ufeff"):
        text = text[1:]
    raw = text.split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    skip = _frontmatter_end(raw)
    out: list[Line] = []
    section, section_line = BEFORE_FIRST_HEADING, 0
    fence: str | None = None
    in_comment = False
    stripped = skip
    for index in range(skip, len(raw)):
        data = raw[index].encode("utf-8", "surrogateescape")
        line = data.decode("utf-8", "replace").rstrip("\r")
        number = index + 1
        if in_comment:
            stripped += 1
            in_comment = "-->" not in line
            continue
        if fence is None and _COMMENT_START.match(line):
            stripped += 1
            in_comment = "-->" not in line.split("<!--", 1)[1]
            continue
        match = _FENCE.match(line)
        code = fence is not None
        if match:
            marker, code = match.group(1), True
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        elif fence is None:
            heading = _HEADING.match(line)
            if heading:
                section, section_line = line.strip(), number
        out.append(Line(number, line, section, section_line, code, len(data)))
    return out, stripped


def _frontmatter_end(raw: list[str]) -> int:
    if not raw or raw[0].rstrip("\r") != "---":
        return 0
    for index in range(1, len(raw)):
        if raw[index].rstrip("\r") in ("---", "..."):
            return index + 1
    return 0


def measure(text: str, path: str = "MEMORY.md", *, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Measure:
    lines, stripped = loaded_lines(text)
    sizes = [line.size for line in lines]
    total = sum(sizes) + len(lines)  # each line with its newline
    by_lines = min(len(lines), max_lines)
    by_bytes, end = 0, -1
    for size in sizes:
        end += size + 1  # the index of this line's newline in the joined text
        if end > max_bytes:
            break
        by_bytes += 1
    loaded = min(by_lines, by_bytes)
    cut_by = None
    if loaded < len(lines):
        cut_by = "lines" if by_lines <= by_bytes else "bytes"
    cut = lines[loaded:]
    sections: dict[tuple[int, str], list[int]] = {}
    for position, line in enumerate(lines):
        counts = sections.setdefault((line.section_line, line.section), [0, 0])
        counts[1] += 1
        if position >= loaded:
            counts[0] += 1
    return Measure(
        path=path,
        lines=len(lines),
        bytes=total,
        max_lines=max_lines,
        max_bytes=max_bytes,
        loaded_lines=loaded,
        loaded_bytes=sum(sizes[:loaded]) + loaded,
        cut_by=cut_by,
        cut=cut,
        sections=[SectionCut(name, at, n_cut, n_all) for (at, name), (n_cut, n_all) in sections.items() if n_cut],
        stripped_lines=stripped,
    )


def measure_file(path: str | os.PathLike[str], *, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Measure:
    """Measure a file; raises OSError when it cannot be read."""
    data = Path(path).read_bytes()  # undecodable bytes are kept as surrogates, so every byte is counted
    return measure(data.decode("utf-8", "surrogateescape"), str(path), max_lines=max_lines, max_bytes=max_bytes)


# ---------------------------------------------------------------- finding the project's index


def project_slug(root: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", root)


def project_root(cwd: str | os.PathLike[str] | None = None) -> str:
    """The main work tree of the git repository holding ``cwd`` (worktrees share it), else ``cwd``."""
    here = os.path.abspath(cwd or os.getcwd())
    try:
        out = subprocess.run(
            ["git", "-C", here, "rev-parse", "--show-toplevel", "--git-common-dir"],
            capture_output=True, text=True, check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return here
    if len(out) < 2:
        return here
    top, common = out[0], os.path.normpath(os.path.join(here, out[1]))
    if os.path.basename(common) == ".git":
        return os.path.dirname(common)
    return top


def _configured_memory_dir(root: str) -> Path | None:
    """Claude Code's ``autoMemoryDirectory`` setting (local, then project, then user settings)."""
    for settings in (Path(root) / ".claude" / "settings.local.json", Path(root) / ".claude" / "settings.json",
                     claude_dir() / "settings.json"):
        try:
            value = json.loads(settings.read_text(encoding="utf-8")).get("autoMemoryDirectory")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, str) and value.strip():
            return Path(value.strip()).expanduser()
    return None


def auto_memory_index(cwd: str | os.PathLike[str] | None = None) -> Path:
    root = project_root(cwd)
    configured = _configured_memory_dir(root)
    if configured is not None:
        return configured / "MEMORY.md"
    return claude_dir() / "projects" / project_slug(root) / "memory" / "MEMORY.md"


def finding(path: str | os.PathLike[str] | None = None, cwd: str | None = None) -> tuple[bool, str, list[str]]:
    """(ok, summary, details) for ``quipu doctor``: the given file, or this project's auto-memory index."""
    target = Path(path) if path else auto_memory_index(cwd)
    if not target.is_file():
        if path:
            return False, f"{target}: no such file", ["- check the path given to --memory-md"]
        return True, f"no auto-memory index for this project (looked for {target})", []
    try:
        result = measure_file(target)
    except OSError as exc:
        return False, f"{target}: cannot read it: {exc}", []
    if not result.over:
        return True, f"{target}: {result.summary()}", []
    fix = (
        f"- run `quipu import memory-md {target}` so every entry is in the store and recalled when relevant, "
        f"then shorten the index below {result.max_lines} lines / {result.max_bytes:,} bytes"
    )
    return False, f"{target}: {result.summary()}", [*result.details(), fix]


# ---------------------------------------------------------------- entries, for `quipu import memory-md`

_BULLET = re.compile(r"^([-*+]|\d{1,3}[.)])[ \t]+(.*)$")
_LINK_FIRST = re.compile(r"^\[([^\]]+)\]\(<?([^)<>\s]+)>?\)[ \t]*(?:[—–:|-]+[ \t]*)?(.*)$")
_BOLD_FIRST = re.compile(r"^\*\*([^*]+)\*\*[ \t]*(?:[—–:|-]+[ \t]*)?(.*)$")
_ANY_LINK = re.compile(r"\[[^\]]*\]\(<?([^)<>\s]+\.md)>?\)")
_SEPARATORS = (" — ", " – ", " - ", ": ", ". ")
TITLE_CHARS = 80
FIELD_CHARS = 300


@dataclass(frozen=True)
class Entry:
    """One memory of a MEMORY.md: a top-level list item and its indented continuation lines."""

    line: int
    end_line: int
    text: str  # without the bullet marker; continuation lines joined by newlines
    title: str
    description: str
    link: str | None  # a relative .md target named by the entry, if any
    section: str  # the heading text above it, without #'s ("" before the first heading)


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] or text[: limit - 1]
    return cut + "…"


def _title_and_description(first: str) -> tuple[str, str, str | None]:
    link = _LINK_FIRST.match(first)
    if link:
        return clip(link.group(1), FIELD_CHARS), clip(link.group(3), FIELD_CHARS), link.group(2)
    bold = _BOLD_FIRST.match(first)
    found = _ANY_LINK.search(first)
    target = found.group(1) if found else None
    if bold:
        return clip(bold.group(1), FIELD_CHARS), clip(bold.group(2), FIELD_CHARS), target
    for separator in _SEPARATORS:
        head, sep, _ = first.partition(separator)
        if sep and 3 <= len(head) <= TITLE_CHARS:
            return clip(head, TITLE_CHARS), clip(first, FIELD_CHARS), target
    return clip(first, TITLE_CHARS), clip(first, FIELD_CHARS), target


def _section_name(raw: str) -> str:
    match = _HEADING.match(raw)
    return match.group(2).strip() if match else ""


def parse_entries(text: str) -> tuple[list[Entry], list[Line]]:
    """(entries, other non-blank lines that are neither entries nor headings)."""
    lines, _ = loaded_lines(text)
    blocks: list[list[Line]] = []
    others: list[Line] = []
    current: list[Line] | None = None
    for line in lines:
        raw = line.text
        if not raw.strip():
            continue
        if line.code:
            if current is not None:
                current.append(line)
            else:
                others.append(line)
            continue
        indented = raw[:1] in (" ", "\t") and len(raw) - len(raw.lstrip(" \t")) >= 2
        if current is not None and indented:
            current.append(line)
            continue
        if _HEADING.match(raw):
            current = None
            continue
        if _BULLET.match(raw.strip()):
            current = [line]
            blocks.append(current)
            continue
        current = None
        others.append(line)
    entries = []
    for block in blocks:
        bullet = _BULLET.match(block[0].text.strip())
        first = bullet.group(2).strip() if bullet else block[0].text.strip()
        rest = [x.text.rstrip() for x in block[1:]]
        if not first and not any(r.strip() for r in rest):
            continue
        title, description, link = _title_and_description(first or rest[0].strip())
        body = "\n".join([first, *_dedent(rest)]).strip("\n")
        entries.append(Entry(block[0].number, block[-1].number, body, title, description, link, _section_name(block[0].section)))
    return entries, others


@dataclass(frozen=True)
class TopicLink:
    """Where an entry's link leads from the folder of its MEMORY.md (``topic_link``)."""

    target: str  # the link's path as written, its #anchor dropped and its %-escapes decoded
    path: str  # the file it names, from the index's folder
    outside: str  # why it leads outside that folder; "" when it stays in


def topic_link(folder: str, link: str | None) -> TopicLink | None:
    """The local file an entry's ``link`` names, from the index's ``folder``; None when it names none
    (no link, a URL, an anchor alone). It leads outside the folder when it is an absolute path
    (``/``, ``~``, ``\\``), climbs out through ``..``, or resolves outside it through a symbolic link
    (the file itself, or a folder on its way). Paths are only resolved here; nothing is read."""
    from urllib.parse import unquote  # only here: only an import reads an entry's link

    target = unquote((link or "").split("#", 1)[0], errors="surrogateescape")
    if not target or "://" in target:
        return None
    full = os.path.normpath(os.path.join(folder, target))
    rel = os.path.relpath(full, folder)
    if target.startswith(("/", "~", "\\")):
        return TopicLink(target, full, "it starts at the home folder" if target[0] == "~" else "it is an absolute path")
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return TopicLink(target, full, "through ..")
    real, top = os.path.realpath(full), os.path.realpath(folder)
    if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
        return TopicLink(target, full, "through a symbolic link")
    return TopicLink(target, full, "")


def _dedent(lines: list[str]) -> list[str]:
    widths = [len(x) - len(x.lstrip(" \t")) for x in lines if x.strip()]
    width = min(widths) if widths else 0
    return [x[width:] for x in lines]
