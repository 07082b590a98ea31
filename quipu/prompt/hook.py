"""The UserPromptSubmit hook: recall on every human prompt, standard library only, fail open.

Contract:
- Reads the event JSON from stdin through one adapter (``PromptEvent.create``); nothing past it
  sees the raw dict. Prints nothing, or one JSON object
  ``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": ...}}``.
- Never fires for machine turns (see ``quipu.prompt.transcript``), inside quipu's own model children
  (``QUIPU_CHILD``), in a session started with ``QUIPU_RECALL=off`` (``locate.switched_on``), or
  when the prompt has no topic.
- A memory injected earlier in the same session is not injected again.
- In a project whose store was found by walking up (``locate.find_stores``) while the per-user
  store exists too, both are read: each with its own floor, evidence rule and session, then
  ``recall.merge`` keeps the best (the project's on ties), each hit labelled ``store: project``
  or ``store: user``, at most the project's limit. A second index is opened only then.
- The event's ``cwd`` is the project the prompt is typed in: a memory naming a file the prompt
  names speaks when it is of that project (``recall.Options.cwd``; every memory of a project's
  own ``.quipu`` is).
- Any failure (bad JSON, missing store or index, locked or corrupt index, unreadable transcript)
  exits 0 with no output and one line in ``$QUIPU_HOME/logs/hook.log``. An index SQLite cannot
  read (damaged, or a hot journal a killed writer left beside it, which a read-only connection
  cannot roll back) is treated as absent: silent, and the same detached refresh is started.
- When the index is behind HEAD, the hook answers from it anyway and starts a detached
  ``quipu index --refresh`` (outside the prompt path) so the next prompt sees the new commits;
  when a store has no index yet (a fresh clone), it stays silent and starts the same refresh.
- An event of up to ``MAX_STDIN`` bytes (tens of megabytes) is read whole, and recall runs on the
  prompt's head and tail (``PROMPT_WINDOW``); a larger one gets no recall and a line in the log.
- A store whose ``.cache``, ``.cache/sessions`` or index is a symlink (or not a real folder or
  file) is refused: silent, one line in the log. No file is opened through a symlink.
"""
import sys
import time

from quipu.prompt import (
    _fastjson,
    _fs,
    evidence,
    indexread,
    inject,
    locate,
    query,
    recall,
    transcript,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import IO

# An event is read whole up to this size (a pasted log of several megabytes is still a prompt: its
# head and tail are recalled on, see PROMPT_WINDOW); a larger one gets no recall and a line in the
# hook log saying so.
MAX_STDIN = 32_000_000
# Of a longer prompt only the first and last half of this many characters are read: its topic is
# in its opening words or in what was pasted last (a trace), and the work stays that of a normal
# prompt whatever the size.
PROMPT_WINDOW = 32_000
LOG_MAX_BYTES = 1_000_000
CHILD_ENV = "QUIPU_CHILD"
_SESSION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
REFRESH_MARK_SECONDS = 30.0
SESSION_KEEP_DAYS = 14
PRUNE_EVERY_SECONDS = 86400.0


class PromptEvent:
    """The fields of a UserPromptSubmit event the hook uses, type-checked."""

    __slots__ = ("session_id", "transcript_path", "cwd", "prompt", "context")

    def __init__(self, session_id: str, transcript_path: str, cwd: str, prompt: str) -> None:
        self.session_id = session_id
        self.transcript_path = transcript_path
        self.cwd = cwd
        self.prompt = prompt
        self.context: str | None = None  # the transcript's tail, read once for every store

    @classmethod
    def create(cls, raw: bytes) -> "PromptEvent | None":
        data = _fastjson.loads(raw.decode("utf-8"), long_strings=PROMPT_WINDOW)
        if not isinstance(data, dict):
            return None
        prompt = data.get("prompt")
        if not isinstance(prompt, str):
            return None
        event_name = data.get("hook_event_name")
        if event_name not in (None, "UserPromptSubmit"):
            return None

        def text(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        return cls(text("session_id"), text("transcript_path"), text("cwd"), prompt)


def log(message: str) -> None:
    try:
        directory = _fs.join(locate.quipu_home(), "logs")
        _fs.makedirs(directory)
        path = _fs.join(directory, "hook.log")
        mode = "w" if _size(path) > LOG_MAX_BYTES else "a"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        with open(path, mode, encoding="utf-8") as fh:
            fh.write(f"{stamp} prompt-hook {message}"[:2000].replace("\n", " ") + "\n")
    except Exception:  # noqa: BLE001 - logging must never break the hook
        pass


def _size(path: str) -> int:
    try:
        return _fs.stat(path).st_size
    except OSError:
        return 0


class _Session:
    """The ids already injected in this session (``<store>/.cache/sessions/<id>.ids``, one per
    line; ``run`` has checked that neither folder is a symlink, and the file is opened without
    following one), opened once for reading and appending: a new session's first prompt then costs one
    lookup in the folder, not a failed open and a create."""

    def __init__(self, root: str, session_id: str) -> None:
        self.fd = -1
        self.seen: frozenset[str] = frozenset()
        clean = "".join(c for c in session_id if c in _SESSION_CHARS)[:128]
        if not clean:
            return
        self.directory = _fs.join(root, locate.CACHE_DIR_NAME, "sessions")
        path = _fs.join(self.directory, f"{clean}.ids")
        flags = _fs.O_RDWR | _fs.O_APPEND | _fs.O_CREAT | _fs.O_NOFOLLOW  # a committed symlink is refused
        try:
            try:
                self.fd = _fs.open_fd(path, flags)
            except FileNotFoundError:
                _fs.makedirs(self.directory)
                self.fd = _fs.open_fd(path, flags)
            data = _fs.read_fd(self.fd)
        except OSError:
            return
        self.seen = frozenset(line for line in data.decode("utf-8", "replace").split("\n") if line)

    def remember(self, ids: list[str]) -> None:
        """Append ``ids``: one small O_APPEND write."""
        if self.fd < 0:
            return
        data = "".join(f"{i}\n" for i in ids if i not in self.seen).encode("utf-8")
        _fs.write_fd(self.fd, data)
        if not self.seen:
            _prune_sessions(self.directory)  # a session's first injection, at most daily

    def close(self) -> None:
        if self.fd >= 0:
            _fs.close_fd(self.fd)
            self.fd = -1


def _prune_sessions(directory: str) -> None:
    """Forget the injected-ids sets of sessions untouched for SESSION_KEEP_DAYS; the folder is
    scanned at most once a day (the mtime of its ``.pruned`` mark says when it last was)."""
    mark = _fs.join(directory, ".pruned")
    now = time.time()
    try:
        if now - _fs.stat(mark).st_mtime < PRUNE_EVERY_SECONDS:
            return
    except OSError:
        pass
    cutoff = now - SESSION_KEEP_DAYS * 86400
    try:
        _touch(mark)
        with _fs.scandir(directory) as entries:
            for entry in entries:
                if (entry.name.endswith((".ids", ".json")) and entry.is_file(follow_symlinks=False)
                        and entry.stat(follow_symlinks=False).st_mtime < cutoff):
                    _fs.unlink(entry.path)
    except OSError:
        pass


def _touch(path: str) -> None:
    """Create or truncate ``path``, never through a symlink."""
    _fs.close_fd(_fs.open_fd(path, _fs.O_WRONLY | _fs.O_CREAT | _fs.O_NOFOLLOW))


def _unsafe_cache(root: str) -> str:
    """The first of ``.cache``, ``.cache/sessions`` (real folders) and the index (a regular file)
    that exists but is something else, or ''."""
    cache = _fs.join(root, locate.CACHE_DIR_NAME)
    for path in (cache, _fs.join(cache, "sessions"), locate.index_path(root)):
        if _fs.lexists(path) and not (_fs.real_file(path) if path.endswith(".sqlite") else _fs.real_dir(path)):
            return path
    return ""


def _spawn_refresh(root: str) -> None:
    """Start ``quipu index --refresh`` detached, at most once per REFRESH_MARK_SECONDS."""
    from quipu.prompt import (
        launch,  # the absolute interpreter, -I: no quipu/ in the session's folder runs
    )

    spawn_detached("an index refresh", _fs.join(root, locate.CACHE_DIR_NAME, "refresh.started"), REFRESH_MARK_SECONDS,
                   launch.quipu_argv("--store", root, "index", "--refresh", "--quiet"))


def spawn_detached(what: str, mark: str, seconds: float, argv: "list[str]") -> None:
    """Start ``argv`` in a session of its own, stdio on /dev/null, unless the file ``mark`` was
    touched less than ``seconds`` ago (it is touched now)."""
    try:
        if time.time() - _fs.stat(mark).st_mtime < seconds:
            return
    except OSError:
        pass
    try:
        import os  # only here, off the common path: at most once per mark and period

        os.makedirs(os.path.dirname(mark), exist_ok=True)
        _touch(mark)
        devnull = os.devnull
        os.posix_spawn(
            argv[0],
            argv,
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, devnull, os.O_WRONLY, 0),
            ],
            setsid=True,
        )
    except OSError as exc:
        log(f"could not start {what}: {exc}")


def run(event: PromptEvent, env: "Mapping[str, str] | None" = None) -> str:
    """The additionalContext for ``event``, or '' to stay silent."""
    env = _fs.environ() if env is None else env
    if env.get(CHILD_ENV) or not locate.switched_on(env, locate.RECALL_SWITCH):
        return ""
    if transcript.is_machine_text(event.prompt):
        return ""
    terms = query.extract_terms(event.prompt)
    if not evidence.names_a_subject(event.prompt, terms):
        return ""  # no topic of its own: never open the index
    stores = locate.find_stores(None, event.cwd or None, env)
    answers: list[tuple[str, recall.Recall, recall.Options, _Session]] = []
    try:
        for root, label in stores:
            found = _recall_store(root, event, terms)
            if found is not None:
                answers.append((label, *found))
        if not answers:
            return ""
        options = answers[0][2]  # the first store's settings bound the answer
        result = recall.merge([(label, r) for label, r, _o, _s in answers], options.limit)
        text = inject.format_context(result.hits, options.max_chars)
        if text:  # every store's session: a copy in the other store is not shown again either
            for _label, _r, _o, session in answers:
                session.remember([h.id for h in result.hits])
        return text
    finally:
        for answer in answers:
            answer[3].close()


def _recall_store(
    root: str, event: PromptEvent, terms: "list[query.Term]"
) -> "tuple[recall.Recall, recall.Options, _Session] | None":
    """One store's recall (its own floor, evidence and session), or None when it stays silent."""
    unsafe = _unsafe_cache(root)
    if unsafe:  # a store may not point quipu's own files anywhere else
        log(f"refusing {unsafe}: it is a symlink or not a real folder/file; recall is off until it is "
            "removed (`quipu doctor` says how)")
        return None
    index = locate.index_path(root)
    if not _fs.isfile(index) and locate.is_store(root):
        _spawn_refresh(root)  # a store freshly cloned from a remote has no index yet
        return None
    try:
        return _recall(root, index, event, terms)
    except indexread.sqlite_module().DatabaseError as exc:
        # A damaged index, or one a killed writer left a hot journal beside (a read-only
        # connection cannot roll it back): as if there were none. The refresh heals it.
        if not locate.is_store(root):
            raise
        log(f"index unreadable ({type(exc).__name__}: {exc}); an index refresh was started")
        _spawn_refresh(root)
        return None


def _recall(
    root: str, index: str, event: PromptEvent, terms: "list[query.Term]"
) -> "tuple[recall.Recall, recall.Options, _Session]":
    db = indexread.connect(index)
    session = _Session(root, event.session_id)
    ok = False
    try:
        # One read transaction for every query: one shared lock and one hot-journal check
        # instead of one per statement, and all answers from the same state of the index.
        db.execute("BEGIN")
        meta = indexread.index_meta(db)
        gitdir = locate.git_dir(root)
        head = locate.read_head(gitdir) if gitdir else None
        if head and meta.get("head") != head:
            _spawn_refresh(root)
        config = indexread.index_config(db, meta)
        if event.context is None:
            event.context = ""
            if event.transcript_path:
                previous, assistant = transcript.read_tail(event.transcript_path, event.prompt)
                event.context = f"{previous}\n{assistant}"
        context = event.context
        count = str(meta.get("count") or "")
        cwd = _fs.abspath(event.cwd) if event.cwd else None
        options = recall.Options.from_config(
            config, exclude=session.seen, store_size=int(count) if count.isdigit() else None,
            cwd=cwd, own_store=locate.serves(root, cwd),
        )
        result = recall.recall(db, event.prompt, context, options, terms)
        ok = True
    except BaseException:
        session.close()
        raise
    finally:
        indexread.release(db, ok)
    return result, options, session


def main(stdin: "IO[bytes] | None" = None, stdout: "IO[str] | None" = None) -> int:
    try:
        if _fs.environ().get(CHILD_ENV):
            return 0
        # The real stdin is read from its descriptor in chunks: a buffered read(n) first sets
        # aside n bytes (a megabyte here) for an event of a few hundred.
        raw = stdin.read(MAX_STDIN + 1) if stdin is not None else _fs.read_upto(0, MAX_STDIN + 1)
        if len(raw) > MAX_STDIN:
            log(f"event larger than {MAX_STDIN // 1_000_000} MB: no recall for this prompt "
                "(only events up to that size are read)")
            return 0
        event = PromptEvent.create(raw)
        if event is None:
            return 0
        text = run(event)
        if text:
            out = stdout or sys.stdout
            out.write(
                _fastjson.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}})
            )
            out.flush()
    except BaseException as exc:  # noqa: BLE001 - fail open, always
        log(f"{type(exc).__name__}: {exc}")
    return 0


def run_as_hook(raw: "bytes | None" = None, root: str = "", served: str = "") -> None:
    """``main`` on the real stdin (or ``raw``, the event the script already read from it) and
    stdout, then exit 0 at once.

    ``served`` is what the script's attempt to reach the prompt server found (see
    ``quipu.prompt.server``): "" (none made), "absent" (no server: one is started for the next
    prompt, with the package under ``root``), "declined" (a server of another install or older
    code), "timeout" (it took the event and did not answer in time: the prompt goes without
    recall rather than waiting twice).

    The output is flushed and every file closed by then; the interpreter's own teardown (freeing
    each module and object one by one) would cost about a sixth of an interpreter start and
    achieve nothing for a process that ends here."""
    try:
        if served == "timeout":
            log("the prompt server did not answer in time: no recall for this prompt")
        else:
            import io  # loaded at every start already

            main(None if raw is None else io.BytesIO(raw))
        sys.stdout.flush()
        sys.stderr.flush()
        if served == "absent" and root:
            from quipu.prompt import server

            if server.enabled(_fs.environ()):
                server.start(root, locate.quipu_home())
    except BaseException:  # noqa: BLE001 - a closed pipe: nothing left to say anyway
        pass
    import posix

    posix._exit(0)
