"""One module per sub-command: ``register(subparsers)`` and ``run(args) -> int``.

This package's own module holds what the entry points read before any command is imported: the
commands' names, the one-memory commands, and which command an argument list names; and what a
command run by the command server (``quipu.warm``) needs: ``serving`` is True in that process, and
a command that needs the terminal as its own (an editor) raises ``NeedsTerminal`` before it has
changed anything, so that the ``quipu`` process runs it itself.
"""
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

serving = False


class NeedsTerminal(BaseException):  # not an Exception: the CLI's own handlers let it through
    """A command run by the command server needs the terminal itself; nothing was changed yet."""


# Sub-command modules, in the order `quipu --help` lists them.
COMMANDS = (
    "init",
    "clone",
    "add",
    "show",
    "list",
    "search",
    "history",
    "skills",
    "recall",
    "supersede",
    "label",
    "retract",
    "log",
    "undo",
    "sync",
    "index",
    "doctor",
    "hooks",
    "hook",
    "install",
    "uninstall",
    "import",
    "sweep",
    "review",
    "session-end",
    "pre-compact",
    "verify",
    "capture",
    "fact",
    "profile",
    "session-start",
    "mcp",
    "serve",
)


# The commands that read or write one memory: short processes, run without the cycle collector,
# and the ones the command server runs (``quipu.warm``).
ONE_MEMORY = frozenset({"add", "show", "label", "retract", "supersede"})


def chosen_command(argv: "Sequence[str]") -> "str | None":
    """The sub-command named in ``argv`` (skipping the global options), if any.

    (No builtin whose name is a command's, such as ``list``, is used here: once that command's
    module is imported, the name in this module's namespace is the module.)"""
    skip = False
    for head in argv:
        if skip:
            skip = False
        elif head == "--store":
            skip = True
        elif not head.startswith("--store="):
            return head if head in COMMANDS else None
    return None
