"""The prompt path's window on the file system, without ``import os``.

Under ``python -I -S`` the interpreter starts without ``os``; importing it (with ``stat``,
``posixpath`` and ``_collections_abc``) costs about a sixth of the whole start. The built-in
``posix`` module underneath it is already loaded, so the few calls the prompt hook makes go
straight to it (what that saves: bench/bench_stand_ins.py). Contract:
- Every function here behaves like its ``os`` / ``os.path`` namesake for str (and path-like)
  paths.
- ``environ()`` is ``os.environ`` when ``os`` is loaded (so changes made through it are seen),
  otherwise a str copy of the process environment decoded as ``os`` decodes it.
- ``open_fd``, ``read_fd``, ``write_fd`` and ``close_fd`` work on file descriptors, without the
  buffered file objects ``open`` builds (which cost more calls than reading a small file).
- ``real_dir(path)`` / ``real_file(path)`` are ``isdir`` / ``isfile`` without following a
  symlink (``lstat``); ``O_NOFOLLOW`` is 0 where the platform has none. ``private_dir(path)``
  also asks that the folder be this user's and closed to everyone else (a server's socket folder).
- ``open_regular`` opens a file for reading without blocking (a FIFO or a device named where a
  file is expected must not hang the hook) and refuses anything but a regular file.
- On a platform without ``posix`` every name is simply the ``os`` one.
"""
import sys

if sys.platform == "win32":  # pragma: no cover - no posix module: os offers the same calls
    import os as _posix
else:
    import posix as _posix

_S_IFMT = 0o170000
_S_IFDIR = 0o040000
_S_IFREG = 0o100000
_environ_copy = None

O_RDWR, O_APPEND, O_CREAT, O_WRONLY = _posix.O_RDWR, _posix.O_APPEND, _posix.O_CREAT, _posix.O_WRONLY
O_NOFOLLOW = getattr(_posix, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(_posix, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(_posix, "O_CLOEXEC", 0)
stat = _posix.stat
unlink = _posix.unlink
scandir = _posix.scandir
getcwd = _posix.getcwd
close_fd = _posix.close
fstat = _posix.fstat
pread = _posix.pread


def open_fd(path: str, flags: int) -> int:
    return _posix.open(path, flags, 0o644)


def open_regular(path: str) -> int:
    """A read-only descriptor on the regular file ``path``; OSError for anything else.

    O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer (forever)."""
    fd = _posix.open(path, _posix.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC)
    try:
        if _posix.fstat(fd).st_mode & _S_IFMT != _S_IFREG:
            raise OSError(f"not a regular file: {path}")
    except BaseException:
        _posix.close(fd)
        raise
    return fd


def read_fd(fd: int) -> bytes:
    """All of a regular file from its current position."""
    return _posix.read(fd, max(_posix.fstat(fd).st_size, 0) + 1)


def read_upto(fd: int, limit: int) -> bytes:
    """Read ``fd`` (a pipe, say) to its end or until more than ``limit`` bytes came."""
    chunks = []
    total = 0
    while total < limit:
        chunk = _posix.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _lmode(path: str) -> int:
    try:
        return _posix.lstat(path).st_mode & _S_IFMT
    except (OSError, ValueError):
        return 0


def real_dir(path: str) -> bool:
    return _lmode(path) == _S_IFDIR


def private_dir(path: str) -> bool:
    """Whether ``path`` is a real folder (not a symlink) of this user's that no one else may use."""
    try:
        st = _posix.lstat(path)
    except (OSError, ValueError):
        return False
    return st.st_mode & _S_IFMT == _S_IFDIR and st.st_uid == _posix.getuid() and not st.st_mode & 0o077


def real_file(path: str) -> bool:
    return _lmode(path) == _S_IFREG


def lexists(path: str) -> bool:
    return _lmode(path) != 0


def write_fd(fd: int, data: bytes) -> None:
    while data:
        data = data[_posix.write(fd, data):]


if sys.platform == "win32":  # pragma: no cover - Windows
    import os as _os

    environ = lambda: _os.environ  # noqa: E731
    join, dirname, normpath, abspath, expanduser = (
        _os.path.join, _os.path.dirname, _os.path.normpath, _os.path.abspath, _os.path.expanduser)
    isfile, isdir = _os.path.isfile, _os.path.isdir
    makedirs = lambda path: _os.makedirs(path, exist_ok=True)  # noqa: E731
else:

    def environ() -> dict[str, str]:
        """The process environment as str -> str."""
        os_module = sys.modules.get("os")
        if os_module is not None:
            shared: dict[str, str] = os_module.environ  # os.environ: a mapping of str to str
            return shared
        global _environ_copy
        if _environ_copy is None:
            encoding = sys.getfilesystemencoding()
            _environ_copy = {
                k.decode(encoding, "surrogateescape"): v.decode(encoding, "surrogateescape")
                for k, v in _posix.environ.items()
            }
        return _environ_copy

    def join(first: str, *rest: str) -> str:
        path = _posix.fspath(first)
        for part in map(_posix.fspath, rest):
            if part.startswith("/"):
                path = part
            elif not path or path.endswith("/"):
                path += part
            else:
                path += "/" + part
        return path

    def dirname(path: str) -> str:
        head = path[: path.rfind("/") + 1]
        if head and head != "/" * len(head):
            head = head.rstrip("/")
        return head

    def normpath(path: str) -> str:
        if not path:
            return "."
        initial = 0
        if path.startswith("/"):
            # POSIX keeps exactly two leading slashes, folds three or more into one.
            initial = 2 if path.startswith("//") and not path.startswith("///") else 1
        parts: list[str] = []
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part != ".." or (not initial and not parts) or (parts and parts[-1] == ".."):
                parts.append(part)
            elif parts:
                parts.pop()
        out = "/" * initial + "/".join(parts)
        return out or "."

    def abspath(path: str) -> str:
        path = _posix.fspath(path)
        if not path.startswith("/"):
            path = join(getcwd(), path)
        return normpath(path)

    def expanduser(path: str) -> str:
        path = _posix.fspath(path)
        if not path.startswith("~"):
            return path
        slash = path.find("/", 1)
        if slash < 0:
            slash = len(path)
        home = environ().get("HOME") if slash == 1 else None
        if home is None:  # ~user, or no HOME: the password database, through os (rare)
            import os

            return os.path.expanduser(path)
        home = home.rstrip("/")
        return (home + path[slash:]) or "/"

    def _mode(path: str) -> int:
        try:
            return _posix.stat(path).st_mode & _S_IFMT
        except (OSError, ValueError):
            return 0

    def isfile(path: str) -> bool:
        return _mode(path) == _S_IFREG

    def isdir(path: str) -> bool:
        return _mode(path) == _S_IFDIR

    def makedirs(path: str) -> None:
        """Create ``path`` and its missing parents; an existing folder is fine."""
        if isdir(path):
            return
        parent = dirname(path.rstrip("/"))
        if parent and parent != path and not isdir(parent):
            makedirs(parent)
        try:
            _posix.mkdir(path, 0o777)
        except FileExistsError:
            if not isdir(path):
                raise
