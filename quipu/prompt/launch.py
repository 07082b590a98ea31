"""The command line that starts quipu itself in a child process, isolated from where it runs.

Standard library only (the prompt hook's detached refresh uses it). Contract:
- ``quipu_argv(*args)`` is ``[<absolute interpreter>, "-I", "-c", BOOT, <package parent>, *args]``:
  ``-I`` keeps the working directory (and the script's folder), ``PYTHONPATH`` and the user's
  site-packages off ``sys.path``, so a ``quipu/`` folder committed to a store, or present in a
  project, can never stand in for the package. ``BOOT`` puts this very package's folder on
  ``sys.path`` (when it is not there already) and runs ``quipu`` as ``python -m quipu`` would.
- The interpreter is ``sys.executable`` made absolute but not resolved: a venv's ``bin/python``
  is a symlink, and only the unresolved path finds the venv's packages.
"""
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess

BOOT = ('import sys; p = sys.argv.pop(1); p in sys.path or sys.path.insert(0, p); '
        'import runpy; runpy.run_module("quipu", run_name="__main__", alter_sys=True)')


def interpreter() -> str:
    import os

    return os.path.abspath(sys.executable)


def package_parent() -> str:
    import os

    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # above quipu/prompt/


def child_argv(code: str, *args: str) -> "list[str]":
    """``[<absolute interpreter>, "-I", "-c", code, <package parent>, *args]``: ``code`` puts
    ``sys.argv[1]``, this package's folder, on ``sys.path`` before it imports quipu."""
    return [interpreter(), "-I", "-c", code, package_parent(), *args]


def quipu_argv(*args: str) -> "list[str]":
    return child_argv(BOOT, *args)


def spare_processor() -> bool:
    """Whether a second process would run beside this one rather than take turns with it."""
    import os

    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) >= 2
    return (os.cpu_count() or 1) >= 2


def end_child(child: "subprocess.Popen[bytes]") -> None:
    """End a child at once and reap it (its input closed, whatever it was doing dropped)."""
    import contextlib

    with contextlib.suppress(OSError):
        child.kill()
    with contextlib.suppress(OSError, ValueError):
        if child.stdin is not None:
            child.stdin.close()
    child.wait()
