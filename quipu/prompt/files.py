"""The files a prompt names, and the memories of the prompt's project that name them.

On the prompt path: the standard library and this folder only. Contract:
- ``named_files(text)``: the files ``text`` names by name and extension ("@TODO.md",
  "./cleanup.py", "src/pkg/core.py": ``todo.md``, ``cleanup.py``, ``core.py``), lower-cased, each
  once, at most NAMED_FILES; a URL names none.
- ``of_this_project(project, cwd)``: whether a memory whose ``project`` field is ``project`` is
  about the project the prompt is typed in (the absolute folder ``cwd``): ``cwd`` is inside the
  folder it names, or at the same place below another home folder (``/home/ann/src/app`` on one
  machine is ``/Users/ann/src/app`` on another, a store synced between them), or, for a project
  named rather than placed ("app"), ``cwd`` or a folder above it has that name. No field, or no
  ``cwd``: no. A ``broad`` folder (``/``, a home folder: ``locate.broad``) places no project: a
  memory of it is taken as one of no project, here and below.
- ``file_hits(db, names, cwd, own_store)``: the memories that name one of ``names`` as a file
  (FTS5 finds the name's words in a row, in order: "todo.md" is "todo" then "md", never "mytodo.md"
  nor "todo.mdx"), less those of another project, each with whether it is of this project
  (``of_this_project``, or every memory is when the store is the project's own ``.quipu``:
  ``own_store``), and how many memories of the store name each file whatever their project, up
  to FILE_ROWS a file (the rows read).
- ``of_other_projects(projects, cwd, own_store)``: which memories are of another project than
  ``cwd``'s (a ``project`` field that ``of_this_project`` does not match): ``quipu.prompt.evidence``
  lets them speak only on strong evidence. None when ``cwd`` is unknown or ``own_store``.

A memory of this project that names a file the person names is about that file, and
``quipu.prompt.recall`` lets it speak; one of no project is only a candidate (which project's
README.md it means is unknown); one of another project is none: its TODO.md is another file.
"""
from quipu.prompt.locate import broad, inside
from quipu.prompt.query import _EDGE, FILE_EXTS, _is_path, fts_quote

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from sqlite3 import Connection

NAMED_FILES = 8               # the files of a prompt that may find memories naming them
FILE_ROWS = 100               # memories read for each of those files


def named_files(text: str) -> "list[str]":
    """The files ``text`` names by name and extension, lower-cased, each once (see the module)."""
    out: dict[str, None] = {}
    for raw in text.split():
        chunk = raw.strip(_EDGE).rstrip(".").lstrip("@")
        if not chunk or "://" in chunk or not _is_path(chunk):
            continue
        name = chunk.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower()
        stem, dot, ext = name.rpartition(".")
        if dot and ext in FILE_EXTS and any(c.isalpha() for c in stem):
            out[name] = None
            if len(out) >= NAMED_FILES:
                break
    return list(out)


def of_this_project(project: "str | None", cwd: "str | None") -> bool:
    """Whether a memory of ``project`` is about the project of the folder ``cwd`` (see the module)."""
    if project is None or not placed(project) or not cwd:
        return False
    if project.startswith("/"):
        if inside(cwd, project):
            return True
        mine, theirs = _in_home(cwd), _in_home(project)  # another machine, another person's home
        return bool(mine and theirs) and inside(f"/{mine}", f"/{theirs}")
    name = project.strip("/")
    return bool(name) and f"/{name}/" in f"{cwd.rstrip('/')}/"


def of_other_projects(projects: "dict[int, str | None]", cwd: "str | None", own_store: bool) -> "set[int]":
    """Of the memories ``{rowid: project field}``, those of another project than the folder ``cwd``'s;
    none when ``cwd`` is unknown or the store is that project's own."""
    if not cwd or own_store:
        return set()
    mine: dict[str, bool] = {}  # one answer a project field: rows share a few
    for project in projects.values():
        if project and project not in mine:
            mine[project] = placed(project) and not of_this_project(project, cwd)
    return {rowid for rowid, project in projects.items() if project and mine[project]}


def placed(project: "str | None") -> bool:
    """Whether a ``project`` field names a project: a name, or a folder that is not ``broad``."""
    return project is not None and project != "" and not (project.startswith("/") and broad(project))


def _in_home(path: str) -> str:
    """``path`` below a home folder ("/home/ann/src/app", "/Users/ann/src/app": "src/app"), else ''."""
    parts = path.strip("/").split("/")
    if parts[0] in ("home", "Users") and len(parts) > 2:
        return "/".join(parts[2:])
    return "/".join(parts[1:]) if parts[0] == "root" else ""


def file_hits(db: "Connection", names: "Sequence[str]", cwd: "str | None" = None,
              own_store: bool = False) -> "tuple[dict[int, tuple[str, bool]], dict[str, int]]":
    """``({rowid: (file, of this project)}, {file: memories naming it})`` (see the module)."""
    out: dict[int, tuple[str, bool]] = {}
    df: dict[str, int] = {}
    sql = ("SELECT rowid, project FROM memories WHERE rowid IN "
           f"(SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? LIMIT {FILE_ROWS})")
    seen: dict[str, tuple[bool, bool]] = {}  # project field: (of this project, of none)
    for name in names:
        found = db.execute(sql, (fts_quote(name),)).fetchall()
        df[name] = len(found)
        for rowid, project in found:
            key = project or ""
            if key not in seen:
                seen[key] = (own_store or of_this_project(project, cwd), not placed(project))
            tied, loose = seen[key]
            if rowid not in out and (tied or loose):
                out[rowid] = (name, tied)
    return out, df
