"""The ``quipu`` program's first step: a one-memory command handed to the command server.

``run`` is the entry point of the ``quipu`` script and ``python -m quipu``. For ``add``, ``show``,
``label``, ``retract`` and ``supersede`` it asks the command server (``quipu.warm.server``) to run
the command, passing it this process's standard streams, and exits with the command's code; the
server's child writes to the terminal itself. Every other command, and any of these that no
server takes, runs in this process (``quipu.cli.run``), exactly as without a server. Contract:
- Only the standard library and ``quipu.prompt.locate`` are imported before the server answers.
- A command is never run twice: the server's child waits for this process's go-ahead (``G``)
  before it starts, and this process falls back to running the command itself only before it has
  sent that. A server that does not answer within ``ANSWER_SECONDS`` is given up.
- A command that needs the terminal as its own (``add`` opening an editor), or that the child
  could not begin, is handed back before anything of it was done, and runs here.
- After the go-ahead, ^C and the other terminal signals this process receives are sent on to the
  child. A child that ends without an exit code (killed) ends this process with 128 + the signal
  it was sent, or 3 with a message.
- With no server, the command runs here and a server is started for the next command (detached,
  the absolute interpreter, ``-I -S``, this process's ``sys.path`` without its first entry, at
  most once per ``START_MARK_SECONDS``). ``QUIPU_COMMAND_SERVER=off`` turns all of it off.
- ``identity()`` is what a server must share with a client to run its commands: the interpreter,
  the package's folder, ``sys.path``, the file-name and locale encodings, and the interpreter's
  options that change what code does (``-X dev``, ``-O``, ``-b``, ``-W`` and ``PYTHONWARNINGS``).
"""
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

KIND = "command"
PROTOCOL = b"QUIPU-COMMAND 1\n"
ANSWER_SECONDS = 5.0
START_MARK_SECONDS = 30.0
BOOT = ("import sys; home, root = sys.argv[1:3]; sys.path[:] = [*sys.argv[3:], root]; "
        "from quipu.warm import server; server.main(home, sys.argv[3:])")


def identity(paths: list[str]) -> bytes:
    import _locale

    from quipu.prompt import launch

    flags = sys.flags  # those that change what a command does (-X dev, -O, -b, -W, -X utf8)
    # The interpreter itself: a venv's `python` and `python3` (the `quipu` script's) are one; the
    # venv is in sys.path.
    parts = [os.path.realpath(sys.executable), launch.package_parent(),
             sys.getfilesystemencoding(), sys.getfilesystemencodeerrors(), _locale.getencoding(),
             repr((flags.utf8_mode, flags.dev_mode, flags.optimize, flags.bytes_warning, sys.warnoptions)), *paths]
    return "\0".join(parts).encode("utf-8", "surrogateescape")


def encode(fields: list[bytes]) -> bytes:
    body = b"".join(b"%d\n" % len(f) + f for f in fields)
    return PROTOCOL + b"%d\n" % len(body) + body


def _request(argv: list[str]) -> bytes:
    streams = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:  # the stream the interpreter made for the descriptor; none, or another kind: run here
            spec = (stream.encoding, stream.errors or "strict", "01"[stream.line_buffering],
                    "01"[getattr(stream, "write_through")])  # noqa: B009 - TextIO does not declare it
        except (AttributeError, TypeError):
            raise ValueError("a standard stream the interpreter did not make") from None
        streams.append("\0".join(spec))
    umask = os.umask(0o22)
    os.umask(umask)
    env = b"\0".join(k + b"=" + v for k, v in os.environb.items())
    return encode([identity(sys.path[1:]), os.getcwdb(), env,
                   b"\0".join(a.encode("utf-8", "surrogateescape") for a in argv), b"%d" % umask,
                   "\n".join(streams).encode("ascii")])


class _Forward:
    """Sends the signals this process gets to the child running the command."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.sent = 0

    def __call__(self, signum: int, frame: object) -> None:
        self.sent = signum
        try:
            os.kill(self.pid, signum)
        except OSError:
            pass


def served(argv: list[str], home: str) -> int | str:
    """The command's exit code when the server ran it; else why it did not (``absent``: no server
    or not a usable one; ``declined``; ``handed back``: the child gave it back before doing any of
    it, as for an editor, which needs this process's terminal), and the command must run here."""
    import _socket
    import _signal  # type: ignore[import-not-found]  # signal itself loads enum

    from quipu.prompt import _fs, locate

    path = locate.server_socket(home, KIND)
    if not _fs.private_dir(os.path.dirname(path)):
        return "absent"  # none, or not a folder only this user can use: its socket may be anyone's
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    why = "absent"
    try:
        conn.settimeout(ANSWER_SECONDS)
        conn.connect(path)
        why = "declined"
        request = _request(argv)
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
        conn.sendmsg([request[:1]], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        conn.sendall(request[1:])
        head = b""
        while not head.endswith(b"\n") and len(head) < 32:
            chunk = conn.recv(32 - len(head))
            if not chunk or chunk == b"L":
                return why
            head += chunk
        if not head.startswith(b"P"):
            return why
        forward = _Forward(int(head[1:]))
        before = {signum: _signal.signal(signum, forward)
                  for signum in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)}
        conn.sendall(b"G")  # from here on the command is the child's: never run it here too
    except (OSError, ValueError):
        conn.close()
        return why
    conn.settimeout(None)
    tail = b""
    try:
        while chunk := conn.recv(64):
            tail += chunk
    except OSError:
        pass
    if tail.startswith(b"X") and tail.endswith(b"\n") and tail[1:-1].isdigit():
        return int(tail[1:-1])
    if tail == b"T":  # handed back before anything was done: an editor needs this terminal, say
        for signum, handler in before.items():
            _signal.signal(signum, handler)  # ^C is this process's own again
        return "handed back"
    if forward.sent:
        return 128 + forward.sent
    os.write(2, b"quipu: the process running the command ended before it finished; see "
                + home.encode("utf-8", "surrogateescape") + b"/logs/hook.log\n")
    return 3


def start(home: str) -> None:
    """A command server for ``home`` and this process's interpreter and ``sys.path``, detached."""
    from quipu.prompt import hook, launch

    hook.spawn_detached("the command server", os.path.join(home, "command-server.started"), START_MARK_SECONDS,
                        [launch.interpreter(), "-I", "-S", "-c", BOOT, home, launch.package_parent(), *sys.path[1:]])


def run() -> NoReturn:
    """The ``quipu`` program: a one-memory command through the server when one takes it, else here."""
    from quipu.commands import ONE_MEMORY, chosen_command
    from quipu.prompt import locate

    argv = sys.argv[1:]
    if chosen_command(argv) in ONE_MEMORY and locate.server_enabled(os.environ, KIND):
        home = locate.quipu_home()
        code = served(argv, home)
        if isinstance(code, int):
            os._exit(code)
        if code == "absent":
            start(home)
    from quipu import cli

    cli.run()
