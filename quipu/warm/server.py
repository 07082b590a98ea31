"""The command server: one process per quipu home with the one-memory commands' modules loaded.

Contract:
- ``main(home, paths)`` imports what ``quipu add``, ``show``, ``label``, ``retract`` and
  ``supersede`` use (``WARM``), takes the lock ``$QUIPU_HOME/run/command.lock`` and listens on
  ``command.sock`` beside it (the folder ``0700`` and this user's, checked as the prompt server
  checks it; ``quipu.prompt.server.Listening``). It serves until 15 minutes pass without a
  request, its socket is gone or replaced, or one of quipu's files it has loaded changes (an
  upgrade).
- A request comes from a process of the same user (the socket's peer is checked), with the
  client's standard input, output and error as passed descriptors. It names the interpreter,
  ``sys.path`` and text encodings the client runs with (``client.identity``); a request that
  names others, or that arrives after one of quipu's loaded files changed, is answered ``L``
  ("run it yourself"); after an upgrade the server then stops, and after ``DECLINE_AT_MOST``
  requests in a row of another kind too, so that a server of the new kind can start.
- Each request is run by a child forked from the server, with nothing of it in the server: the
  client's arguments, environment (all of it), working folder, umask and streams (recreated with
  the client's encodings and buffering), the signal dispositions of a new process, and
  ``quipu.cli.main``. The child first sends ``P<pid>`` and waits for the go-ahead ``G`` (the
  client then sends it the signals it gets); at the end, after the exit callbacks and threads a
  normal exit waits for, it sends ``X<code>``; or ``T`` ("run it yourself") when the command
  needs the terminal as its own (``quipu.commands.NeedsTerminal``, raised before it changed
  anything) or the child failed before the command began (say the client's folder is gone).
- Children are reaped by the system; the server never waits for one, and many run at once (the
  store's own locks order their writes, as between separate processes).
"""
from __future__ import annotations

import os
import signal
import socket
import sys

from quipu import commands
from quipu.prompt import hook
from quipu.prompt import server as places
from quipu.warm import client

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

KIND = client.KIND
RECEIVE_SECONDS = 4.0
DECLINE_AT_MOST = 3
MAX_REQUEST = 4_000_000
# What the one-memory commands import at their first use, beyond their own modules.
WARM = ("quipu.index.near", "quipu.index.refresh", "quipu.index.rebuild", "quipu.store.gitstore",
        "quipu.store.scanned", "quipu.store.schema", "quipu.store.effects", "quipu.store.settings",
        "quipu.store.layers", "quipu.store.audit", "quipu.store.decisions", "encodings.ascii")

# Arguments each command is parsed with once at the start: argparse compiles the patterns it
# matches arguments with at their first use.
REHEARSALS = (["add", "-t", "t", "-f", "f"], ["add", "-t", "t", "body"], ["add", "-"], ["show", "x"],
              ["label", "x", "pinned"], ["retract", "x", "--reason", "r"], ["supersede", "x", "y"])


def warm() -> None:
    """Import every module a one-memory command uses, build each one's parser (``cli.BUILT``), and
    compile the patterns the parsers and the secret scanner would otherwise compile in every child."""
    import contextlib
    import importlib
    import io

    from quipu import cli
    from quipu.store import secrets_scan

    for argv in REHEARSALS:
        if argv[0] not in cli.BUILT:
            cli.BUILT[argv[0]] = cli.build_parser(argv[0])
        parser = cli.BUILT[argv[0]]
        with contextlib.suppress(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            parser.parse_args(argv)
    for name in WARM:
        importlib.import_module(name)
    secrets_scan.warm()


def _fingerprint() -> "dict[str, tuple[int, int]]":
    """(mtime_ns, size) of the file of each of quipu's modules loaded now (an upgrade replaces them)."""
    import quipu

    package = os.path.dirname(os.path.abspath(quipu.__file__)) + os.sep
    out = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.startswith(package):
            try:
                st = os.stat(path)
                out[path] = (st.st_mtime_ns, st.st_size)
            except OSError:
                out[path] = (-1, -1)
    return out


class Request:
    """A decoded request (``decode``)."""

    __slots__ = ("identity", "cwd", "env", "argv", "umask", "streams")

    def __init__(self, fields: list[bytes]) -> None:
        self.identity = fields[0]
        self.cwd = fields[1]
        self.env = places.environment(fields[2])
        self.argv = [a.decode("utf-8", "surrogateescape") for a in fields[3].split(b"\0")] if fields[3] else []
        self.umask = int(fields[4])
        self.streams = []
        for line in fields[5].decode("ascii").split("\n"):
            encoding, errors, line_buffering, write_through = line.split("\0")
            self.streams.append((encoding, errors, line_buffering == "1", write_through == "1"))
        if len(self.streams) != 3:
            raise ValueError("three streams")


def complete(data: bytes) -> bool:
    """Whether ``data`` holds a whole request (``client.encode``: the protocol line, the length of
    what follows, then the fields)."""
    head, newline, body = data[len(client.PROTOCOL):].partition(b"\n")
    return data.startswith(client.PROTOCOL) and bool(newline) and len(body) >= int(head)


def decode(data: bytes) -> Request:
    """The request in ``data``; ValueError when it is not one."""
    if not data.startswith(client.PROTOCOL):
        raise ValueError("not a command request")
    head, _, body = data[len(client.PROTOCOL):].partition(b"\n")
    if len(body) != int(head):
        raise ValueError("a request cut short")
    return Request(places.read_fields(body, 6))


class Server(places.Listening):
    kind = KIND

    def __init__(self, home: str, paths: list[str]) -> None:
        super().__init__(places.socket_path(home, KIND))
        self.identity = client.identity(paths)
        self.sources = _fingerprint()
        self.declined = 0

    def serve(self) -> None:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the system
        signal.signal(signal.SIGTERM, _terminate)
        self.loop()

    def handle(self, conn: Any) -> None:
        fds: list[int] = []
        try:
            self.answer(conn, fds)
        finally:
            for fd in fds:
                os.close(fd)

    def answer(self, conn: Any, fds: list[int]) -> None:
        """Read one request and hand it to a child; ``fds`` gets the passed descriptors (the
        caller closes them)."""
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
            return
        data = _receive(conn, fds)
        request = decode(data)
        upgraded = _fingerprint() != self.sources
        if upgraded or request.identity != self.identity or len(fds) != 3:
            # Upgraded in place: stop, and the next start loads the new code. Asked by another kind
            # of client again and again: make way, so that a server of that kind can start.
            self.declined += 1
            self.stop = upgraded or self.declined >= DECLINE_AT_MOST
            conn.sendall(b"L")
            return
        self.declined = 0
        if os.fork() == 0:
            _child(self, conn, request, fds)


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(0)  # the socket is removed on the way out


def _receive(conn: Any, fds: list[int]) -> bytes:
    """The whole request; ``fds`` gets the descriptors passed with its first bytes."""
    conn.settimeout(RECEIVE_SECONDS)
    chunks = []
    total = 0
    data, ancillary, _flags, _addr = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds += [int.from_bytes(payload[i:i + 4], sys.byteorder, signed=True) for i in range(0, usable, 4)]
    while data:
        chunks.append(data)
        total += len(data)
        if total > MAX_REQUEST:
            raise ValueError("a request over 4 MB")
        if complete(b"".join(chunks)):
            break
        data = conn.recv(1 << 16)
    return b"".join(chunks)


def _child(server: Server, conn: Any, request: Request, fds: list[int]) -> NoReturn:
    """Run the request as the client's own process would, then end (never returns to the loop)."""
    code = 3
    handed_back = b"T"  # "run it yourself": nothing of the command was done here
    try:
        server.listener.close()
        os.close(server.lock)
        for signum in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        conn.sendall(b"P%d\n" % os.getpid())
        if conn.recv(1) != b"G":  # the client gave up waiting, and may run the command itself
            os._exit(0)
        conn.settimeout(None)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        _become(request)
        try:
            code = _run(request.argv)
        except commands.NeedsTerminal:  # an editor: the client's own terminal
            conn.sendall(handed_back)
            os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - the child must never return to the server's loop
        try:
            hook.log(f"command server: a child failed: {type(exc).__name__}: {exc}")
            if not commands.serving:  # before the command began
                conn.sendall(handed_back)
                os._exit(0)
        except BaseException:  # noqa: BLE001
            pass
    try:
        conn.sendall(b"X%d\n" % code)
    finally:
        os._exit(code)


def _become(request: Request) -> None:
    """The client's environment, folder, umask, arguments and standard streams."""
    import io

    places.become_environment(request.env)
    os.chdir(request.cwd)
    os.umask(request.umask)
    sys.argv = ["quipu", *request.argv]  # what the crash log names
    streams = []
    for fd, (encoding, errors, line_buffering, write_through) in enumerate(request.streams):
        raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
        buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        streams.append(io.TextIOWrapper(buffered, encoding=encoding, errors=errors, newline="\n",
                                        line_buffering=line_buffering, write_through=write_through))
    sys.stdin, sys.stdout, sys.stderr = streams
    for name, stream in zip(("__stdin__", "__stdout__", "__stderr__"), streams, strict=True):
        setattr(sys, name, stream)  # what the terminal's width is read from


def _run(argv: list[str]) -> int:
    """``quipu.cli.main`` as ``quipu.cli.run`` runs it, and what a normal exit waits for."""
    import atexit

    from quipu import cli

    cli.set_collector(argv)
    commands.serving = True
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's --help and usage errors
        code = _exit_code(exc.code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # joins what a normal exit joins
    return code


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def main(home: str, paths: list[str]) -> None:
    """Warm up, then serve ``home`` (for clients whose ``sys.path`` beyond its first entry is
    ``paths``) until idle, replaced or upgraded."""
    try:
        warm()
        server = Server(home, paths)
    except Exception as exc:  # noqa: BLE001 - a server that cannot start leaves each command to run alone
        hook.log(f"command server not started: {type(exc).__name__}: {exc}")
        return
    try:
        if server.open():
            server.serve()
    except Exception as exc:  # noqa: BLE001
        hook.log(f"command server stopped: {type(exc).__name__}: {exc}")
    finally:
        server.close()
