"""The one error family of quipu.

The library raises these; only ``quipu.cli`` turns them into messages and exit codes.
Each message ends with how to fix the problem.
"""
from __future__ import annotations

# Exit codes (quipu.cli): 0 done; 1 a FatalError (its message says how to fix it); 2 a usage error
# (argparse's, or a UsageError); 3 an unexpected failure (the traceback is in a log file); 130 interrupted.
EXIT_SOME_SKIPPED = 4  # done, but some inputs were left out, each listed with its reason (`quipu import`)


class FatalError(RuntimeError):
    """An expected failure the user can fix; the CLI prints it and exits 1."""


class UsageError(FatalError):
    """Arguments that do not go together, found after parsing; the CLI exits 2 as argparse does."""


class NoStore(FatalError):
    """No memory store could be found or opened."""


class InvalidMemory(FatalError):
    """A memory (or a field of one) does not satisfy the schema."""


class ConflictError(FatalError):
    """A write or an undo cannot be applied cleanly."""


class ChangedSinceRead(ConflictError):
    """A write made from a file read earlier, refused because the file changed since."""


class NotFound(FatalError):
    """A memory, commit or sweep that was named does not exist."""


class UnsafeStore(FatalError):
    """A store holds something quipu refuses to follow or act on (a symlink, a special file)."""


class SecretRefused(InvalidMemory):
    """Text to be committed looks like it holds a credential; nothing was committed."""
