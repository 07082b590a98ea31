"""The UserPromptSubmit hook and everything it imports: the standard library only, nothing else of quipu.

Every module in this folder obeys one rule, pinned by tests/architecture_test.py: it imports the
standard library and modules of this folder, nothing more (no third-party package, no other part
of quipu), so the hook starts in about one bare interpreter start. The rest of quipu may import
from here (the locator, the query terms, the fence), never the other way round.

``load_prompt_path`` loads the prompt hook's modules straight from their cached bytecode. (It
lives here, not in a module of its own, because the hook imports this package anyway and every
further import through importlib costs it about 100 microseconds.) Importing a module the usual
way runs importlib's finders, specs, locks and checks in Python: half a millisecond for the hook's
seven modules, an eighth of what the whole hook may cost. For each module, in dependency order,
it checks that ``__pycache__/<name>.<tag>.pyc`` belongs to this interpreter (magic number) and
to the source as it is now (timestamp-based, with the source's mtime and size: the check
importlib itself makes), unmarshals the code and runs it in a new module. Contract:
- Any module whose bytecode is missing, stale, hash-based or unreadable is imported the usual way
  instead (which compiles and caches it), and so is everything after it; nothing is ever run from
  bytecode that does not match its source.
- Loaded modules are in ``sys.modules`` and are attributes of this package, as after an import.
  A module that raises while running is removed again and the error propagates.
"""
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from types import CodeType

try:
    import posix as _posix
except ImportError:  # pragma: no cover - not a POSIX system: the usual imports only
    _posix = None  # type: ignore[assignment]


# The prompt hook's modules, each after the ones it imports.
PROMPT_PATH = ("_fs", "_fastjson", "locate", "vocabulary", "stem", "query", "transcript", "fence", "indexread", "scoring",
               "inject", "files", "evidence", "recall", "hook")


def _bytecode(package_dir: str, short: str) -> "CodeType | None":
    """The code object of ``short`` from its cached bytecode, or None if that may not be used."""
    external = sys.modules.get("_frozen_importlib_external")
    tag = sys.implementation.cache_tag
    if external is None or tag is None or _posix is None:
        return None
    source = f"{package_dir}/{short}.py"
    try:
        st = _posix.stat(source)
        fd = _posix.open(f"{package_dir}/__pycache__/{short}.{tag}.pyc", _posix.O_RDONLY)
        try:  # posix directly: a buffered file object costs more calls than reading does
            data = _posix.read(fd, _posix.fstat(fd).st_size)
        finally:
            _posix.close(fd)
    except OSError:
        return None
    if (
        len(data) < 16
        or data[:4] != external.MAGIC_NUMBER
        or data[4:8] != b"\x00\x00\x00\x00"  # flags: timestamp-based, not hash-based
        or int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
        or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF
    ):
        return None
    import marshal

    code: CodeType = marshal.loads(memoryview(data)[16:])
    return code


def load_prompt_path(names: "tuple[str, ...]" = PROMPT_PATH) -> "list[str]":
    """Load the prompt hook's modules (see the module's notes); returns those run from bytecode."""
    package = sys.modules[__name__]
    package_dir = package.__path__[0]
    fast: "list[str]" = []
    for short in names:
        name = f"{__name__}.{short}"
        if name in sys.modules:
            continue
        code = _bytecode(package_dir, short)
        if code is None:
            break
        module = type(sys)(name)
        module.__file__ = f"{package_dir}/{short}.py"
        module.__dict__["__cached__"] = f"{package_dir}/__pycache__/{short}.{sys.implementation.cache_tag}.pyc"
        module.__package__ = __name__
        sys.modules[name] = module
        try:
            exec(code, module.__dict__)
        except BaseException:
            del sys.modules[name]
            raise
        setattr(package, short, module)
        fast.append(name)
    for short in names:
        __import__(f"{__name__}.{short}")  # whatever was not loaded above, the usual way
    return fast
