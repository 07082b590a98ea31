"""Finding a store and reading its HEAD with the standard library alone.

This module is on the prompt path: it imports only ``quipu.prompt._fs`` (no ``os``). Contract:
- ``find_store_root`` applies the documented order: an explicit path, ``QUIPU_STORE``, the
  nearest ``.quipu`` folder upwards from the working directory, then the per-user default
  ``$QUIPU_HOME/store`` (``QUIPU_HOME`` defaults to ``$XDG_DATA_HOME/quipu`` or
  ``~/.local/share/quipu``). It returns a path whether or not a store exists there.
- ``find_stores`` returns the stores read together: the chosen one alone, except when it was
  found by walking up (a project's ``.quipu``) and the per-user store exists too; then
  ``[(project, "project"), (user, "user")]``, project first. ``--store`` and ``QUIPU_STORE``
  pin one store.
- ``inside(path, folder)`` says whether ``path`` is ``folder`` or below it, by their text;
  ``serves(root, cwd)`` whether the store at ``root`` is the own store of the project ``cwd`` is
  in (a ``.quipu`` folder in a folder holding ``cwd``).
- ``git_dir`` follows a ``.git`` file (submodules, worktrees) to the real git directory;
  ``project_root(folder)`` is the work tree holding a folder (a linked worktree's main checkout;
  never a home folder's own repository, as dotfiles keep one, for a folder below it);
  ``project_field`` what a project memory records as its project (nothing in the project's own store);
  ``broad(folder)`` whether a folder holds many projects as a rule (``/``, a home folder).
- ``server_socket(home, kind)`` is where the server of ``kind`` (``prompt``: the prompt server;
  ``command``: the command server) listens, in ``$QUIPU_HOME/run``; ``server_enabled`` reads the
  environment variable that turns it off (``QUIPU_PROMPT_SERVER``, ``QUIPU_COMMAND_SERVER``).
- ``switched_on(env, name)``: a switch of the environment a session starts in, on unless set to
  off, 0, no or false: ``QUIPU_RECALL`` (nothing injected), ``QUIPU_CAPTURE`` (nothing captured),
  ``QUIPU_HISTORY`` (nothing archived), so one session opts out without touching any setting.
- ``read_head`` returns the commit id HEAD points at by reading ``HEAD``, the loose ref file and
  ``packed-refs`` directly (no git, no subprocess), or None when it cannot tell.
"""
from quipu.prompt import _fs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

STORE_DIR_NAME = ".quipu"
CACHE_DIR_NAME = ".cache"
INDEX_NAME = "index.sqlite"
RUN_DIR = "run"
# The servers that keep quipu's modules loaded, by kind, and the variable that turns each off.
SERVER_SWITCHES = {"prompt": "QUIPU_PROMPT_SERVER", "command": "QUIPU_COMMAND_SERVER"}


def quipu_home(env: "Mapping[str, str] | None" = None) -> str:
    env = _fs.environ() if env is None else env
    if env.get("QUIPU_HOME"):
        return _fs.abspath(_fs.expanduser(env["QUIPU_HOME"]))
    base = env.get("XDG_DATA_HOME") or _fs.join(_fs.expanduser("~"), ".local", "share")
    return _fs.join(base, "quipu")


def server_socket(home: str, kind: str = "prompt") -> str:
    """Where the server of ``kind`` of the quipu home ``home`` listens."""
    return _fs.join(home, RUN_DIR, f"{kind}.sock")


def server_enabled(env: "Mapping[str, str]", kind: str = "prompt") -> bool:
    return switched_on(env, SERVER_SWITCHES[kind])


# The switches a person sets in the environment a session starts in (``QUIPU_RECALL=off claude``):
# each is on unless set to one of OFF.
RECALL_SWITCH = "QUIPU_RECALL"     # off: nothing of the store is injected (prompts, session start)
CAPTURE_SWITCH = "QUIPU_CAPTURE"   # off: nothing of the session is captured (session end, compaction)
HISTORY_SWITCH = "QUIPU_HISTORY"   # off: the session's turns are not archived
OFF = ("off", "0", "no", "false")


def switched_on(env: "Mapping[str, str]", name: str) -> bool:
    """Whether the switch ``name`` is on in ``env``: unset, or set to anything but one of ``OFF``."""
    return env.get(name, "").strip().lower() not in OFF


def default_store(env: "Mapping[str, str] | None" = None) -> str:
    return _fs.join(quipu_home(env), "store")


def find_store_root(
    explicit: str | None = None, cwd: str | None = None, env: "Mapping[str, str] | None" = None
) -> tuple[str, str]:
    """Return (store root, how it was chosen). Walking up, a ``.quipu`` folder that is not a store
    (a project's files under that name, a folder made by hand) is passed over: it would otherwise
    hide the per-user store (``not_stores`` names it for ``quipu doctor``)."""
    env = _fs.environ() if env is None else env
    if explicit:
        return _fs.abspath(_fs.expanduser(explicit)), "--store"
    if env.get("QUIPU_STORE"):
        return _fs.abspath(_fs.expanduser(env["QUIPU_STORE"])), "QUIPU_STORE"
    for candidate in _walked(cwd):
        if is_store(candidate):
            return candidate, WALKED
    return default_store(env), "per-user default"


def _walked(cwd: "str | None") -> "Iterator[str]":
    """The ``.quipu`` folders of ``cwd`` and the folders above it, nearest first, found as they are read."""
    here = _fs.abspath(cwd or _fs.getcwd())
    while True:
        candidate = _fs.join(here, STORE_DIR_NAME)
        if _fs.isdir(candidate):
            yield candidate
        parent = _fs.dirname(here)
        if parent == here:
            return
        here = parent


def not_stores(cwd: "str | None" = None) -> "list[str]":
    """The ``.quipu`` folders nearer to ``cwd`` than the store walking up finds, that are not stores."""
    out: "list[str]" = []
    for candidate in _walked(cwd):
        if is_store(candidate):
            break
        out.append(candidate)
    return out


WALKED = f"nearest {STORE_DIR_NAME} folder"
PROJECT = "project"
USER = "user"


def find_stores(
    explicit: str | None = None, cwd: str | None = None, env: "Mapping[str, str] | None" = None
) -> "list[tuple[str, str]]":
    """The stores to read, first wins ties: [(root, label)], label '' for a store read alone."""
    env = _fs.environ() if env is None else env
    root, how = find_store_root(explicit, cwd, env)
    if how != WALKED:
        return [(root, "")]
    user = default_store(env)
    if user == root or not is_store(user):
        return [(root, "")]
    return [(root, PROJECT), (user, USER)]


def inside(path: str, folder: str) -> bool:
    """Whether the absolute ``path`` is ``folder`` or below it, compared as written (no link is followed)."""
    folder = folder.rstrip("/")
    return path == folder or path.startswith(folder + "/") or (not folder and path.startswith("/"))


def serves(root: str, cwd: "str | None") -> bool:
    """Whether the store at ``root`` is the own store of the project the folder ``cwd`` is in."""
    root = _fs.normpath(root)
    return bool(cwd) and root.endswith("/" + STORE_DIR_NAME) and inside(_fs.normpath(cwd or ""), _fs.dirname(root))


def is_store(root: str) -> bool:
    """A git repository with a ``quipu.toml``: what ``quipu init`` makes."""
    return bool(git_dir(root)) and _fs.isfile(_fs.join(root, "quipu.toml"))


def git_dir(root: str) -> str | None:
    dotgit = _fs.join(root, ".git")
    if _fs.isdir(dotgit):
        return dotgit
    try:
        with open(dotgit, encoding="utf-8") as fh:
            line = fh.read(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    target = line[len("gitdir:") :].strip()
    return _fs.normpath(_fs.join(root, target))


def project_root(folder: str) -> str:
    """The work tree that holds ``folder`` (for a linked worktree, its main checkout), found by
    walking up to a ``.git``; ``folder`` itself when no work tree holds it, or when the one that
    does is a ``broad`` folder (a home folder kept in git for its dotfiles is no project of the
    folders below it). A project memory is of this folder, whichever subfolder or worktree its
    session ran in."""
    start = here = _fs.normpath(folder)
    while True:
        gitdir = git_dir(here)
        if gitdir:
            if here != start and broad(here):
                return folder
            common = common_dir(gitdir)
            return common[: -len("/.git")] if common.endswith("/.git") and common != "/.git" else here
        parent = _fs.dirname(here)
        if parent == here or not parent:
            return folder
        here = parent


def broad(folder: str) -> bool:
    """Whether ``folder`` holds many projects as a rule: the root, a folder of home folders
    (``/home``, ``/Users``), a home folder (``/home/ann``, ``/Users/ann``, ``/root``, ``$HOME``)."""
    folder = folder.rstrip("/")
    if folder in ("", "/home", "/Users", "/root") or folder.rpartition("/")[0] in ("/home", "/Users"):
        return True
    raw = _fs.environ().get("HOME", "")
    if raw != _home[0]:
        _home[:] = [raw, _fs.normpath(raw) if raw else ""]
    return bool(_home[1]) and folder == _home[1]


_home = ["", ""]  # $HOME as read last, and its normal form


def project_field(store_root: str, folder: str) -> "str | None":
    """What a project memory written from ``folder`` into the store at ``store_root`` records as
    its project: the work tree holding ``folder``; nothing when the store is that project's own
    (its memories are the project's on every machine, and a shared store keeps no home path)."""
    root = project_root(folder)
    return None if serves(store_root, root) else root


def common_dir(gitdir: str) -> str:
    """The git folder a linked worktree shares with its main checkout (``commondir``), else ``gitdir``."""
    try:
        with open(_fs.join(gitdir, "commondir"), encoding="utf-8") as fh:
            return _fs.normpath(_fs.join(gitdir, fh.read().strip()))
    except OSError:
        return gitdir


def read_head(gitdir: str) -> str | None:
    """The commit id HEAD resolves to, read from git's files; None if it cannot be read."""
    try:
        with open(_fs.join(gitdir, "HEAD"), "rb") as fh:
            head = fh.read(1024).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head if _is_sha(head) else None
    return read_ref(gitdir, head[4:].strip())


def read_ref(gitdir: str, ref: str) -> str | None:
    """The object id ``ref`` holds (its loose file, in the worktree's git folder then the common
    one, then packed-refs), or None when it does not exist."""
    common = common_dir(gitdir)
    for base in (gitdir, common):
        try:
            with open(_fs.join(base, ref), "rb") as fh:
                sha = fh.read(128).decode("ascii", "replace").strip()
            return sha if _is_sha(sha) else None
        except OSError:
            continue
    try:
        with open(_fs.join(common, "packed-refs"), encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref and _is_sha(parts[0]):
                    return parts[0]
    except OSError:
        return None
    return None


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def index_path(root: str) -> str:
    return _fs.join(root, CACHE_DIR_NAME, INDEX_NAME)
