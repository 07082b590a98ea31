"""The prompt server: the prompt hook's modules kept loaded, answering the hook over a socket.

A prompt hook is a new interpreter on every prompt, and most of what it costs beyond a bare start
is loading its own modules and ``_sqlite3`` again. The server is one long-lived process per quipu
home that has them loaded: ``hooks/prompt_submit.py`` sends it the event and its environment over
``$QUIPU_HOME/run/prompt.sock`` and prints the answer, without importing quipu at all. Standard
library only, like the rest of this folder. Contract:
- Each request is answered by ``hook.main`` exactly as the hook process would answer it: with the
  client's environment, working directory and stdin, the same output bytes. Each index stays
  open while its file is the same (``indexread.connect``); every prompt reads in a transaction of
  its own, so every write is seen. Requests are answered one at a time.
- A request names the quipu package folder and the interpreter the client runs; a server of
  another install, or whose own source files changed since it started (an upgrade), answers
  ``L`` ("run it yourself") and, in the second case, stops. The client then recalls in process.
- The socket's folder is created ``0700`` and must be a real folder of this user's, not
  reachable by others; otherwise the server does not start. One server per folder: it holds an
  exclusive lock on ``prompt.lock`` (which holds its process id) for its whole life, and a
  socket left by a dead one is replaced.
- It stops after ``IDLE_SECONDS`` without a request, or once its socket is gone or replaced.
- A request that runs longer than ``REQUEST_SECONDS`` is abandoned (no output, one line in the
  hook log), and a client that stops sending cannot hold it longer than that either.
- ``start(root, home)`` spawns one detached (absolute interpreter, ``-I -S``, the package's own
  folder last on ``sys.path``), at most once per ``START_MARK_SECONDS``; the prompt hook calls
  it after answering a prompt no server answered. ``QUIPU_PROMPT_SERVER=off`` turns all of it off.
- What the command server (``quipu.warm``) shares with this one lives here too: ``listen`` and
  ``Listening`` (the folder's check, the lock, the socket and the loop of accepting, by kind:
  ``prompt`` or ``command``), ``read_fields`` and ``environment`` (a request's length-prefixed
  fields and its variables), ``become_environment``, and ``status`` and ``pid_of`` for doctor,
  the benches and the tests.
"""
import sys

from quipu.prompt import _fs, hook, indexread, locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = b"QUIPU-PROMPT 1\n"
IDLE_SECONDS = 900.0
CHECK_SECONDS = 30.0
REQUEST_SECONDS = 4.0
START_MARK_SECONDS = 30.0
SOURCE_CHECK_SECONDS = 1.0
DECLINE_AT_MOST = 3
MAX_REQUEST = hook.MAX_STDIN + 1_000_000
# Socket paths longer than this do not fit in sockaddr_un on every platform.
MAX_SOCKET_PATH = 100
BOOT = ("import sys; p = sys.argv.pop(1); sys.path.append(p); "
        "from quipu.prompt import server; server.main(p, sys.argv[1])")


# What the server of each kind (``locate.SERVER_SWITCHES``) answers, and what starts it.
ANSWERS = {"prompt": ("the prompt hook", "the next prompt starts it"),
           "command": ("`quipu add`, `show`, `label`, `retract` and `supersede`", "the next `quipu add` starts it")}


socket_path = locate.server_socket
enabled = locate.server_enabled


def start(root: str, home: str) -> None:
    """Spawn a detached server for ``home`` whose modules come from the package under ``root``."""
    if len(socket_path(home).encode()) > MAX_SOCKET_PATH:
        return
    from quipu.prompt import launch

    hook.spawn_detached("the prompt server", _fs.join(home, "prompt-server.started"), START_MARK_SECONDS,
                        [launch.interpreter(), "-I", "-S", "-c", BOOT, root, home])


def status(home: str, env: "dict[str, str]", kind: str = "prompt") -> "tuple[bool, str, list[str]]":
    """(fine, one line, how to fix it) about the server of ``kind`` of ``home``."""
    import fcntl
    import os

    folder = _fs.dirname(socket_path(home, kind))
    switch = locate.SERVER_SWITCHES[kind]
    answers, starts = ANSWERS[kind]
    if not enabled(env, kind):
        return True, f"off ({switch}={env.get(switch)}): {answers} run in their own process", []
    if _fs.lexists(folder):
        if not _fs.private_dir(folder):
            return False, f"{folder} is not a folder only you can use, so the {kind} server does not start", [
                f"chmod 700 {folder}" if _fs.real_dir(folder) else f"remove {folder}"]
    try:
        fd = os.open(_fs.join(folder, f"{kind}.lock"), os.O_RDONLY | _fs.O_NOFOLLOW)
    except OSError:
        return True, f"not running: {starts}", []
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True, f"not running: {starts}", []
    except OSError:
        pid = os.read(fd, 32).decode(errors="replace").strip()
        return True, f"running (process {pid}), answering {answers} on {socket_path(home, kind)}", []
    finally:
        os.close(fd)


def pid_of(home: str, kind: str = "prompt") -> "int | None":
    """The process id the server of ``kind`` of ``home`` wrote in its lock file (it may have ended since)."""
    try:
        fd = _fs.open_regular(_fs.join(_fs.dirname(socket_path(home, kind)), f"{kind}.lock"))
    except OSError:
        return None
    try:
        text = _fs.read_fd(fd).decode("ascii", "replace").strip()
    finally:
        _fs.close_fd(fd)
    return int(text) if text.isdigit() else None


def token(root: str, executable: str) -> bytes:
    """What a request must name to be answered: the package folder and the interpreter."""
    return f"{root}\0{executable}".encode("utf-8", "surrogateescape")


def decode_request(data: bytes) -> "tuple[bytes, bytes, dict[bytes, bytes], bytes]":
    """The four fields of a request; ValueError when it is not one."""
    if not data.startswith(PROTOCOL):
        raise ValueError("not a prompt request")
    fields = read_fields(data[len(PROTOCOL):], 4)
    return fields[0], fields[1], environment(fields[2]), fields[3]


def read_fields(data: bytes, count: int) -> "list[bytes]":
    """``count`` fields, each its length in digits, a newline and its bytes, and nothing after
    them; ValueError when ``data`` is not that."""
    fields = []
    at = 0
    for _ in range(count):
        end = data.index(b"\n", at, at + 21)
        size = int(data[at:end])
        fields.append(data[end + 1:end + 1 + size])
        at = end + 1 + size
        if size < 0 or at > len(data):
            raise ValueError("a field is cut short")
    if at != len(data):
        raise ValueError("bytes after the last field")
    return fields


def environment(blob: bytes) -> "dict[bytes, bytes]":
    """The variables of ``NAME=value`` pairs joined by NUL; ValueError for one without a name."""
    env: "dict[bytes, bytes]" = {}
    for pair in blob.split(b"\0") if blob else ():
        key, sep, value = pair.partition(b"=")
        if not sep or not key:
            raise ValueError("a variable without a name")
        env[key] = value
    return env


def become_environment(env: "dict[bytes, bytes]") -> None:
    """This process's environment made exactly ``env`` (``os.environ`` sees each change), and the
    time zone read again when ``TZ`` changed."""
    import os
    import time

    environ = os.environb
    zone = environ.get(b"TZ")
    for key in [k for k in environ if k not in env]:
        del environ[key]
    for key, value in env.items():
        if environ.get(key) != value:
            environ[key] = value
    if env.get(b"TZ") != zone:
        time.tzset()


class _Timeout(Exception):
    pass


class Listening:
    """A server's socket and lock (``listen``) and the loop that accepts on it: until ``stop``,
    ``IDLE_SECONDS`` without a request, or its socket gone or replaced. Each connection goes to
    ``handle``; one that fails is logged and the server goes on."""

    kind = "prompt"

    def __init__(self, path: str) -> None:
        self.path = path
        self.stop = False
        self.listener: "Any" = None  # a socket.socket once listening
        self.inode = 0
        self.lock = -1

    def open(self) -> bool:
        """Take the lock and listen; False when another server has it or the folder is unsafe."""
        taken = listen(self.path, self.kind)
        if taken is None:
            return False
        self.listener, self.lock, self.inode = taken
        self.listener.settimeout(CHECK_SECONDS)
        return True

    def _still_mine(self) -> bool:
        import os

        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def handle(self, conn: "Any") -> None:
        raise NotImplementedError

    def loop(self) -> None:
        import time

        last = time.monotonic()
        while not self.stop:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                if time.monotonic() - last > IDLE_SECONDS or not self._still_mine():
                    break
                continue
            last = time.monotonic()
            try:
                self.handle(conn)
            except Exception as exc:  # noqa: BLE001 - one request's failure never stops the server
                hook.log(f"{self.kind} server: {type(exc).__name__}: {exc}")
            finally:
                conn.close()
        self.close()

    def close(self) -> None:
        import os

        if self.listener is not None:
            if self._still_mine():
                try:
                    os.unlink(self.path)
                except OSError:
                    pass
            self.listener.close()
            self.listener = None
        if self.lock >= 0:
            os.close(self.lock)
            self.lock = -1


class Server(Listening):
    """The prompt server (see the module's contract)."""

    def __init__(self, root: str, home: str) -> None:
        super().__init__(socket_path(home))
        self.token = token(root, sys.executable)
        self.sources = self._fingerprint()
        self.checked = 0.0
        self.declined = 0  # requests in a row from another install's hook
        self.env: "dict[bytes, bytes]" = {}

    def _changed(self) -> bool:
        """Whether the prompt path's sources changed since the start (looked at once a second)."""
        import time

        now = time.monotonic()
        if now - self.checked < SOURCE_CHECK_SECONDS:
            return False
        self.checked = now
        return self._fingerprint() != self.sources

    def _fingerprint(self) -> "list[tuple[str, int, int]]":
        """The prompt path's sources as they are now: (path, mtime_ns, size) of each module."""
        out = []
        for name in ("__init__", "server", "launch", *sys.modules["quipu.prompt"].PROMPT_PATH):
            path = _fs.join(sys.modules["quipu.prompt"].__path__[0], f"{name}.py")
            try:
                st = _fs.stat(path)
                out.append((path, st.st_mtime_ns, st.st_size))
            except OSError:
                out.append((path, -1, -1))
        return out

    def serve(self) -> None:
        import signal

        def expire(signum: int, frame: object) -> None:
            raise _Timeout(f"a request ran over {REQUEST_SECONDS:g} s")

        def terminate(signum: int, frame: object) -> None:
            raise SystemExit(0)  # the socket is removed on the way out

        signal.signal(signal.SIGALRM, expire)
        signal.signal(signal.SIGTERM, terminate)
        self.loop()

    def handle(self, conn: "Any") -> None:
        import signal

        signal.setitimer(signal.ITIMER_REAL, REQUEST_SECONDS)
        try:
            self.answer(conn)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def answer(self, conn: "Any") -> None:
        import io

        data = _receive(conn)
        request_token, cwd, env, stdin = decode_request(data)
        if request_token != self.token or self._changed():
            # Upgraded in place: the next start loads the new code. Asked only by another
            # install's hook, again and again: that hook's own server may take the socket.
            self.declined = self.declined + 1 if request_token != self.token else DECLINE_AT_MOST
            self.stop = self.declined >= DECLINE_AT_MOST
            conn.sendall(b"L")
            return
        self.declined = 0
        if env != self.env:  # the client's environment, exactly: the hook reads it through os.environ
            become_environment(env)  # and the hook log's times in the client's zone
            self.env = env
        import os

        try:
            os.chdir(cwd)
        except OSError:
            os.chdir("/")
        out = io.StringIO()
        hook.main(io.BytesIO(stdin), out)
        conn.sendall(b"A" + out.getvalue().encode("utf-8"))


def listen(path: str, kind: str) -> "tuple[Any, int, int] | None":
    """Take the one lock of ``kind`` beside the socket ``path`` (writing this process's id in it)
    and listen there: (socket, lock's descriptor, socket's inode), or None when another server
    holds the lock or the folder is not one only this user can use (logged)."""
    import fcntl
    import os
    import socket

    folder = _fs.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if not _fs.private_dir(folder):
        hook.log(f"{kind} server not started: {folder} must be a folder only its owner can use "
                 f"(`chmod 700 {folder}`)")
        return None
    lock = os.open(_fs.join(folder, f"{kind}.lock"), os.O_RDWR | os.O_CREAT | _fs.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return None  # another server is answering
    os.ftruncate(lock, 0)
    os.write(lock, str(os.getpid()).encode())  # who answers, for `kill`, doctor and the bench
    try:
        os.unlink(path)  # a dead server's socket
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    return listener, lock, os.stat(path).st_ino


def _receive(conn: "Any") -> bytes:
    """The whole request: until the client shuts its side, at most MAX_REQUEST bytes."""
    conn.settimeout(REQUEST_SECONDS)
    chunks = []
    total = 0
    while total <= MAX_REQUEST:
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def main(root: str, home: str) -> None:
    """Run a server for ``home`` until it is idle, replaced or its code changes."""
    server = Server(root, home)
    indexread.keep_connections()
    try:
        if server.open():
            server.serve()
    except Exception as exc:  # noqa: BLE001 - a server that cannot run leaves the hook to work alone
        hook.log(f"prompt server stopped: {type(exc).__name__}: {exc}")
    finally:
        server.close()
