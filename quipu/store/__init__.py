"""The memory store: the memory format, git writes, git's index, locks, settings and git hooks."""
