"""git's objects and refs read and written with the standard library (and the git program), so a
write of one memory never loads libgit2.

Contract:
- ``Objects(gitdir)`` reads an object from its loose file, and any other (packed, or in an
  alternate) through one ``git cat-file --batch`` process started on first need and kept for the
  life of the ``Objects``; it writes loose objects as git does (zlib, a temporary file renamed
  into place, read-only). SHA-1 repositories only: ``Unsupported`` otherwise, and the caller
  uses libgit2.
- ``build_tree(objects, base, changes)`` is the one tree builder of quipu's writes: the tree
  ``base`` (a tree id, or None for none) with each path set to a blob of the given bytes or
  removed (None); every tree on the way is written once; folders left empty disappear; a path
  that needs a file and a folder of one name is refused.
- ``Tree(objects, tree)`` looks up many paths of one tree, each folder read once.
- ``branch(gitdir)`` is the branch HEAD points at (None when detached), ``read_ref`` its commit
  (loose ref, then packed-refs, in the common git dir of a linked worktree).
- ``update_ref`` is git's own compare-and-swap of a branch (``git update-ref NEW OLD``, with its
  reflog), run with hooks switched off: "ok", "moved" (someone moved the branch: rebuild on the
  new tip) or "locked" (another program holds the ref's lock).
- ``identity(gitdir)`` is git's ``user.name`` and ``user.email`` from its config files (as
  libgit2 reads them; a config that includes other files is asked of ``git config``), or None.
"""
from __future__ import annotations

import contextlib
import os
import time
import zlib
from collections.abc import Mapping
from hashlib import sha1
from typing import IO, TYPE_CHECKING, Any

from quipu.errors import ConflictError, FatalError, InvalidMemory

if TYPE_CHECKING:
    import subprocess

TREE_MODE = 0o40000
BLOB_MODE = 0o100644
GITLINK_MODE = 0o160000
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class Unsupported(Exception):
    """A repository this module does not write (another object format)."""


def common_dir(gitdir: str) -> str:
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as fh:
            return os.path.normpath(os.path.join(gitdir, fh.read().strip()))
    except OSError:
        return gitdir


def _safe_ref(ref: str) -> bool:
    parts = ref.split("/")
    return ref.startswith("refs/") and all(p not in ("", ".", "..") for p in parts) and "\x00" not in ref


def branch(gitdir: str) -> str | None:
    """The ref HEAD names (``refs/heads/main``), or None when HEAD is detached or unreadable."""
    try:
        with open(os.path.join(gitdir, "HEAD"), "rb") as fh:
            head = fh.read(1024).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return None
    ref = head[4:].strip()
    return ref if _safe_ref(ref) else None


def read_ref(gitdir: str, ref: str) -> str | None:
    """The object id ``ref`` holds, or None when it does not exist."""
    common = common_dir(gitdir)
    for base in dict.fromkeys((gitdir, common)):
        try:
            with open(os.path.join(base, ref), "rb") as fh:
                value = fh.read(128).decode("ascii", "replace").strip()
        except OSError:
            continue
        return value if _is_hex(value) else None
    try:
        with open(os.path.join(common, "packed-refs"), encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref and _is_hex(parts[0]):
                    return parts[0]
    except OSError:
        return None
    return None


def _is_hex(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def git_env() -> dict[str, str]:
    """The environment for git children: no variable points them at another repository or index."""
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
                                                           "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR")}
    env["LC_ALL"] = "C"
    return env


def update_ref(gitdir: str, ref: str, new: str, old: str, message: str) -> str:
    """Move ``ref`` from ``old`` to ``new`` as git does (lock, check, reflog): "ok", "moved" or "locked"."""
    code, err = run_git(["--git-dir", gitdir, "-c", "core.hooksPath=/dev/null", "update-ref", "-m", message, ref, new, old])
    if code == 0:
        return "ok"
    if read_ref(gitdir, ref) != old:
        return "moved"
    if b".lock" in err or os.path.exists(os.path.join(common_dir(gitdir), ref + ".lock")):
        return "locked"  # (git speaks English here: LC_ALL=C)
    raise ConflictError(f"git could not move {ref}: {err.decode('utf-8', 'replace').strip()}\n"
                        "- run `quipu doctor` to check the store")


def run_git(args: list[str]) -> tuple[int, bytes]:
    """Run ``git ARGS`` (stdin and stdout empty); its exit code and what it wrote on stderr.
    ``posix_spawn`` directly: a write does not load the subprocess module for one short child."""
    read, write = os.pipe()
    try:
        pid = os.posix_spawnp("git", ["git", *args], git_env(), file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, write, 2),
        ])
    except FileNotFoundError:
        os.close(read)
        raise FatalError("git is not installed (quipu moves a store's branch with `git update-ref`); "
                         "nothing was written\n- install git, then try again") from None
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    with os.fdopen(read, "rb") as fh:
        err = fh.read()
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:  # pragma: no cover - retried by Python itself since 3.5
            continue
    return os.waitstatus_to_exitcode(status), err


class Objects:
    """A repository's object database, read and written without libgit2 (see the module contract)."""

    def __init__(self, gitdir: str) -> None:
        self.gitdir = gitdir
        self.folder = os.path.join(common_dir(gitdir), "objects")
        self._batch: subprocess.Popen[bytes] | None = None

    def close(self) -> None:
        batch, self._batch = self._batch, None
        if batch is not None:
            for stream in (batch.stdin, batch.stdout):
                if stream is not None:
                    stream.close()
            batch.wait()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - at exit the process may already be gone
            pass

    def read(self, oid: str) -> tuple[str, bytes]:
        """(kind, content) of the object ``oid``; KeyError when the repository lacks it."""
        if len(oid) != 40:
            raise Unsupported("object ids that are not SHA-1")
        try:
            with open(os.path.join(self.folder, oid[:2], oid[2:]), "rb") as fh:
                raw = zlib.decompress(fh.read())
        except (OSError, zlib.error):
            return self._read_batch(oid)
        header, _, data = raw.partition(b"\x00")
        kind, _, _size = header.decode("ascii", "replace").partition(" ")
        return kind, data

    def _read_batch(self, oid: str) -> tuple[str, bytes]:
        if self._batch is None:
            import subprocess  # only for objects not in a loose file

            self._batch = subprocess.Popen(
                ["git", "--git-dir", self.gitdir, "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git_env(),
            )
        stdin, stdout = self._batch.stdin, self._batch.stdout
        assert stdin is not None and stdout is not None  # both are pipes
        try:
            stdin.write(oid.encode("ascii") + b"\n")
            stdin.flush()
            header = stdout.readline().split()
            if len(header) != 3:
                raise KeyError(oid)
            data = _read_exactly(stdout, int(header[2]))
            stdout.read(1)  # the newline after the content
        except (OSError, ValueError):
            self.close()
            raise KeyError(oid) from None
        return header[1].decode("ascii"), data

    def write(self, kind: str, data: bytes) -> str:
        raw = f"{kind} {len(data)}\x00".encode("ascii") + data
        oid = sha1(raw).hexdigest()
        folder = os.path.join(self.folder, oid[:2])
        path = os.path.join(folder, oid[2:])
        if os.path.exists(path):
            return oid
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f"tmp_obj_{os.getpid()}_{os.urandom(6).hex()}")  # git's own prefix
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            with open(fd, "wb", closefd=True) as fh:
                fh.write(zlib.compress(raw))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return oid

    def tree(self, oid: str) -> list[tuple[int, str, str]]:
        """The entries (mode, name, id) of the tree ``oid``."""
        kind, data = self.read(oid)
        if kind != "tree":
            raise KeyError(oid)
        return parse_tree(data)

    def commit_tree(self, oid: str) -> str:
        """The tree id of the commit ``oid``."""
        kind, data = self.read(oid)
        if kind != "commit" or not data.startswith(b"tree "):
            raise KeyError(oid)
        return data[5:45].decode("ascii")


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = stream.read(size)
        if not chunk:
            raise OSError("git cat-file ended early")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def parse_tree(data: bytes) -> list[tuple[int, str, str]]:
    out = []
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\x00", space)
        out.append((int(data[pos:space], 8), data[space + 1:nul].decode("utf-8", "surrogateescape"),
                    data[nul + 1:nul + 21].hex()))
        pos = nul + 21
    return out


def tree_bytes(entries: Mapping[str, tuple[int, str]]) -> bytes:
    """A tree's content from {name: (mode, id)}, in git's order (a folder sorts as ``name/``)."""
    def key(name: str) -> bytes:
        raw = name.encode("utf-8", "surrogateescape")
        return raw + b"/" if entries[name][0] == TREE_MODE else raw

    return b"".join(f"{entries[n][0]:o} ".encode("ascii") + n.encode("utf-8", "surrogateescape") + b"\x00"
                    + bytes.fromhex(entries[n][1]) for n in sorted(entries, key=key))


def build_tree(objects: Objects, base: str | None, changes: Mapping[str, bytes | None]) -> str:
    nested: dict[str, Any] = {}
    for path, data in changes.items():
        *folders, name = path.split("/")
        node = nested
        for folder in folders:
            node = node.setdefault(folder, {})
            if not isinstance(node, dict):
                raise InvalidMemory(f"refusing to write {path!r}: a file and a folder of one name")
        if isinstance(node.get(name), dict):
            raise InvalidMemory(f"refusing to write {path!r}: a file and a folder of one name")
        node[name] = objects.write("blob", data) if data is not None else None
    return _with_all(objects, base, nested) or objects.write("tree", b"")


def _with_all(objects: Objects, tree: str | None, node: dict[str, Any]) -> str | None:
    """The tree ``tree`` with the changes of ``node`` (names to blob ids, None to remove, or the
    changes inside a folder); None when it ends up empty."""
    entries = {name: (mode, oid) for mode, name, oid in objects.tree(tree)} if tree is not None else {}
    for name, change in node.items():
        present = entries.get(name)
        if isinstance(change, dict):
            sub = present[1] if present is not None and present[0] == TREE_MODE else None
            new_sub = _with_all(objects, sub, change)
            if new_sub is None:
                entries.pop(name, None)
            else:
                entries[name] = (TREE_MODE, new_sub)
        elif change is None:
            entries.pop(name, None)
        else:
            entries[name] = (BLOB_MODE, change)
    if not entries:
        return None
    return objects.write("tree", tree_bytes(entries))


class Tree:
    """Look-ups of many paths in one tree, each folder read once: ``blob(rel)`` is the (mode, id)
    of a file (a blob entry, a symlink included), or None."""

    def __init__(self, objects: Objects, tree: str) -> None:
        self.objects = objects
        self.id = tree
        self._folders: dict[str, dict[str, tuple[int, str]] | None] = {}

    def folder(self, rel: str) -> dict[str, tuple[int, str]] | None:
        if rel not in self._folders:
            if rel == "":
                found: dict[str, tuple[int, str]] | None = self._read(self.id)
            else:
                parent, _, name = rel.rpartition("/")
                above = self.folder(parent)
                entry = above.get(name) if above is not None else None
                found = self._read(entry[1]) if entry is not None and entry[0] == TREE_MODE else None
            self._folders[rel] = found
        return self._folders[rel]

    def _read(self, oid: str) -> dict[str, tuple[int, str]]:
        return {name: (mode, oid) for mode, name, oid in self.objects.tree(oid)}

    def entry(self, rel: str) -> tuple[int, str] | None:
        folder, _, name = rel.rpartition("/")
        entries = self.folder(folder)
        return entries.get(name) if entries is not None else None

    def has(self, rel: str) -> bool:
        """Whether ``rel`` names anything in the tree (a file, a folder, a submodule)."""
        return self.entry(rel) is not None

    def blob(self, rel: str) -> tuple[int, str] | None:
        entry = self.entry(rel)
        return entry if entry is not None and entry[0] not in (TREE_MODE, GITLINK_MODE) else None

    def data(self, rel: str) -> bytes | None:
        entry = self.blob(rel)
        return self.objects.read(entry[1])[1] if entry is not None else None


# ---------------------------------------------------------------- commits and identity


def commit_bytes(tree: str, parents: list[str], who: tuple[str, str], message: str,
                 when: float | None = None) -> bytes:
    stamp = time.time() if when is None else when
    local = time.localtime(stamp)
    offset = (local.tm_gmtoff or 0) // 60
    sign = "-" if offset < 0 else "+"
    person = f"{_clean(who[0])} <{_clean(who[1])}> {int(stamp)} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    head = [f"tree {tree}", *(f"parent {p}" for p in parents), f"author {person}", f"committer {person}"]
    return ("\n".join(head) + "\n\n" + message).encode("utf-8")


def _clean(text: str) -> str:
    """What libgit2 keeps of a name or email: no angle brackets, no newline, no outer spaces."""
    return text.replace("<", "").replace(">", "").replace("\n", "").strip()


def identity(gitdir: str) -> tuple[str, str] | None:
    """``(user.name, user.email)`` from git's config files, last one wins; None when either is unset."""
    found: dict[str, str] = {}
    for path in _config_files(gitdir):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        if "[include" in text.lower():
            return _identity_from_git(gitdir)
        found.update(_user_section(text))
    name, email = found.get("name"), found.get("email")
    return (name, email) if name and email else None


def _config_files(gitdir: str) -> list[str]:
    env = os.environ
    home = env.get("HOME") or os.path.expanduser("~")
    files = [] if env.get("GIT_CONFIG_NOSYSTEM") else [env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    if env.get("GIT_CONFIG_GLOBAL"):
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        files += [os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "git", "config"),
                  os.path.join(home, ".gitconfig")]
    return [*files, os.path.join(common_dir(gitdir), "config")]


def _user_section(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            end = line.find("]")
            section = line[1:end].strip().lower() if end > 0 else ""
            line = line[end + 1:].strip() if end > 0 else ""
            if not line:
                continue
        if section != "user" or not line or line[0] in "#;":
            continue
        key, eq, value = line.partition("=")
        key = key.strip().lower()
        if eq and key in ("name", "email"):
            out[key] = _config_value(value)
    return out


def _config_value(raw: str) -> str:
    out, quoted, i = [], False, 0
    raw = raw.strip()
    while i < len(raw):
        ch = raw[i]
        if ch == '"':
            quoted = not quoted
        elif ch == "\\" and i + 1 < len(raw):
            i += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i], raw[i]))
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip() if not quoted else "".join(out)


def _identity_from_git(gitdir: str) -> tuple[str, str] | None:
    import subprocess

    values = []
    for key in ("user.name", "user.email"):
        done = subprocess.run(["git", "--git-dir", gitdir, "config", "--get", key], stdin=subprocess.DEVNULL,
                              capture_output=True, env=git_env(), check=False)
        values.append(done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else "")
    return (values[0], values[1]) if all(values) else None
