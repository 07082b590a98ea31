"""One module per sub-command: ``register(subparsers)`` and ``run(args) -> int``."""
