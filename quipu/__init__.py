"""quipu: a git-native memory for Claude Code.

This package's import must stay free of third-party imports (and of ``os``): the prompt hook
imports ``quipu.prompt`` with nothing but the standard library on ``sys.path``. The flow of the
subpackages is drawn in docs/architecture.md.
"""
try:
    import posix as _posix
except ImportError:  # pragma: no cover - not a POSIX system: the usual imports only
    _posix = None  # type: ignore[assignment]

__version__ = "0.1.0"


def _source_checkout_probes() -> None:
    """In a source checkout the top-level ``probes/`` folder is the ``quipu.probes`` package (the
    wheel maps it there); make that true here too without copying anything."""
    if _posix is None:  # pragma: no cover
        return
    here = __file__.rpartition("/")[0]
    root = here.rpartition("/")[0]
    try:
        _posix.stat(f"{here}/probes")
        return  # an installed wheel: quipu/probes is already here
    except OSError:
        pass
    try:
        _posix.stat(f"{root}/probes/__init__.py")
    except OSError:
        return
    __path__.append(root)  # noqa: F821 - a package's own __path__


_source_checkout_probes()
