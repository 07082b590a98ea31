"""The prompt hook's first step, imported by ``prompt_submit.py`` beside it (its cached bytecode
loads faster than Python compiles a script of this size at every start).

It hands the event to the prompt server, the hook's modules kept loaded (quipu/prompt/server.py),
through $QUIPU_HOME/run/prompt.sock and prints its answer: no quipu module is loaded then. When
no server answers, quipu recalls in this process and starts one for the next prompt. The quipu
package is found above this folder, in a source checkout (hooks/ next to quipu/) or an installed
wheel (quipu/_assets/hooks/); it goes last on sys.path, so nothing there (nor the working
directory) can stand in for a standard module. Fails open. Inside quipu's own model child
(``QUIPU_CHILD``) and in a session started with ``QUIPU_RECALL=off`` it reads the event and
stops, silent, before anything else.
"""
import gc
import sys

gc.disable()
raw = None
served = ""
try:
    import posix

    top = __file__.rsplit("/", 2)[0]  # an absolute path: the script put this folder on sys.path as one
    root = top.rsplit("/", 2)[0] if top.endswith("/quipu/_assets") else top
    env = posix.environ
    home = env.get(b"QUIPU_HOME") or (env.get(b"XDG_DATA_HOME") or env.get(b"HOME", b"~") + b"/.local/share") + b"/quipu"
    off = (b"off", b"0", b"no", b"false")  # quipu.prompt.locate.OFF
    if env.get(b"QUIPU_CHILD") or env.get(b"QUIPU_RECALL", b"").strip().lower() in off:
        # quipu's own model child, or a session that opted out: silent, the event taken whole so
        # the agent's write never meets a closed pipe
        while posix.read(0, 1 << 20):
            pass
        posix._exit(0)
    if home[:1] == b"/" and env.get(b"QUIPU_PROMPT_SERVER", b"").strip().lower() not in off:
        chunks = []
        size = 0
        while size <= 32_000_000:  # quipu.prompt.hook.MAX_STDIN: a larger event is logged there
            chunk = posix.read(0, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        raw = b"".join(chunks)
        served = "absent"
        if size > 32_000_000:
            raise OverflowError("the hook logs an event this large")
        import _socket

        client = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        client.settimeout(5.0)
        client.connect(home + b"/run/prompt.sock")
        served = "declined"
        fields = (f"{root}\0{sys.executable}".encode("utf-8", "surrogateescape"), posix.getcwdb(),
                  b"\0".join(k + b"=" + v for k, v in env.items()), raw)
        client.sendall(b"QUIPU-PROMPT 1\n" + b"".join(b"%d\n" % len(f) + f for f in fields))
        client.shutdown(_socket.SHUT_WR)
        served = "timeout"
        chunks = []
        while chunk := client.recv(1 << 16):
            chunks.append(chunk)
        answer = b"".join(chunks)
        if answer[:1] == b"A":
            answer = answer[1:]
            while answer:
                answer = answer[posix.write(1, answer):]
            posix._exit(0)
        served = "declined"
except TimeoutError:  # while connecting: as if absent; while answering: it has the prompt
    pass
except BaseException:  # noqa: BLE001 - no server, or not a usable one: recall in this process
    served = "declined" if served == "timeout" else served
try:
    sys.path.append(root)
    import quipu.prompt

    quipu.prompt.load_prompt_path()  # the hook's modules from their cached bytecode, without importlib
    from quipu.prompt.hook import run_as_hook
except BaseException:  # noqa: BLE001 - a prompt hook fails open
    sys.exit(0)
run_as_hook(raw, root, served)
