"""quipu: a git-native memory for Claude Code.

This package's import must stay free of third-party imports (and of ``os``): the prompt hook
imports ``quipu.recall`` and friends with nothing but the standard library on ``sys.path``.
"""
__version__ = "0.1.0"


def _source_checkout_probes() -> None:
    """In a source checkout the top-level ``probes/`` folder is the ``quipu.probes`` package (the
    wheel maps it there); make that true here too without copying anything."""
    try:
        import posix
    except ImportError:  # pragma: no cover - not a POSIX system
        return
    here = __file__.rpartition("/")[0]
    root = here.rpartition("/")[0]
    try:
        posix.stat(f"{here}/probes")
        return  # an installed wheel: quipu/probes is already here
    except OSError:
        pass
    try:
        posix.stat(f"{root}/probes/__init__.py")
    except OSError:
        return
    __path__.append(root)  # type: ignore[name-defined]  # noqa: F821


_source_checkout_probes()
