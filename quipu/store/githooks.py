"""Git hooks in the store that keep the index fresh, chained with the user's own hooks.

Contract:
- ``install`` writes a small POSIX-sh stub for pre-commit, post-commit, post-merge,
  post-checkout and post-rewrite into the directory git uses for hooks (``git rev-parse
  --git-path hooks``, so ``core.hooksPath`` and worktrees are honoured). A hook that is not ours
  is moved to ``<hook>.quipu-legacy`` and run first with the same arguments and stdin; its exit
  status is kept (a failing pre-commit still stops the commit). Re-installing is idempotent; a
  foreign hook where a legacy one already exists is a clear error.
- ``uninstall`` removes our stubs and moves a legacy hook back, byte for byte (same file, so
  the same mode).
- The post-* stubs start ``quipu index --refresh`` detached and never fail the git command. They
  are an optimisation only: every read compares the index with HEAD anyway (libgit2 commits,
  resets and ``update-ref`` run no hook at all).
- The pre-commit stub refuses a commit that adds a symlink, a submodule or a file under
  ``.cache/`` (quipu never follows those out of the store; see docs/security.md).
- The pre-commit stub also closes a race in git itself: ``git commit`` reads the index before it
  takes ``index.lock`` and writes that copy back, so a quipu write that landed in between loses
  its staged entry and the person's commit would delete the memory. A staged deletion of a
  ``memories/`` or ``events/`` file that is still in the worktree, byte for byte as in HEAD, is
  that race (``git rm`` removes the file too), and the stub stages the file again.
"""
from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from quipu.errors import FatalError
from quipu.prompt import launch

HOOKS = ("pre-commit", "post-commit", "post-merge", "post-checkout", "post-rewrite")
MARKER = "# quipu-managed-hook v1"
LEGACY_SUFFIX = ".quipu-legacy"

_STUB = """#!/bin/sh
{marker}
# Keeps quipu's search index fresh. Your own hook, if you had one, is {name}{legacy} and runs first.
input=""
[ "$(basename "$0")" = post-rewrite ] && input=$(cat)
rc=0
if [ -x "$0{legacy}" ]; then
  if [ -n "$input" ]; then printf '%s\\n' "$input" | "$0{legacy}" "$@"; else "$0{legacy}" "$@"; fi
  rc=$?
fi
py={python}
if [ -z "$QUIPU_CHILD" ] && [ -x "$py" ]; then
  root=$(git rev-parse --show-toplevel 2>/dev/null) &&
    ( "$py" -I -c {boot} {package} --store "$root" index --refresh --quiet </dev/null >/dev/null 2>&1 & ) 2>/dev/null
fi
exit $rc
"""


_PRE_COMMIT_STUB = """#!/bin/sh
{marker}
# Keeps a concurrent quipu write's memory files from being committed as deleted (see
# quipu/store/githooks.py). Your own hook, if you had one, is {name}{legacy} and runs first.
if [ -x "$0{legacy}" ]; then
  "$0{legacy}" "$@" || exit $?
fi
bad=$(git diff --cached --raw --diff-filter=ACMRT 2>/dev/null |
  awk -F'\\t' '{{ split($1, m, " "); if (m[2] == "120000" || m[2] == "160000" || $NF ~ /^\\.cache(\\/|$)/) print $NF }}')
if [ -n "$bad" ]; then
  echo "quipu: refusing to commit a symlink, a submodule or a cache file into the memory store:" >&2
  printf '%s\\n' "$bad" | sed 's/^/  /' >&2
  echo "- quipu never follows such a path out of the store; unstage it with: git rm --cached -- PATH" >&2
  exit 1
fi
git diff --cached --name-only --diff-filter=D -- memories events 2>/dev/null | while IFS= read -r f; do
  [ -f "$f" ] || continue
  blob=$(git rev-parse -q --verify "HEAD:$f" 2>/dev/null) || continue
  [ "$(git hash-object -- "$f" 2>/dev/null)" = "$blob" ] && git add -- "$f"
done
exit 0
"""


def hooks_dir(root: Path) -> Path:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--git-path", "hooks"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise FatalError(f"cannot find the git hooks folder of {root}: {exc}\n- is it a git repository?") from None
    path = Path(out)
    return path if path.is_absolute() else Path(root) / path


def is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")[:400]
    except OSError:
        return False


def _stub(name: str) -> str:
    # Not realpath: a venv's bin/python is a symlink to the base interpreter, and only the
    # unresolved path makes Python find the venv (and the quipu installed in it).
    # -I and the package's own folder (quipu.prompt.launch): the stub runs in the store's root, where a
    # committed quipu/ folder would otherwise be imported instead of quipu.
    python = launch.interpreter()
    template = _PRE_COMMIT_STUB if name == "pre-commit" else _STUB
    return template.format(marker=MARKER, name=name, legacy=LEGACY_SUFFIX, python=shlex.quote(python),
                           boot=shlex.quote(launch.BOOT), package=shlex.quote(launch.package_parent()))


def install(root: Path) -> list[str]:
    directory = hooks_dir(root)
    directory.mkdir(parents=True, exist_ok=True)
    done = []
    for name in HOOKS:
        hook = directory / name
        legacy = directory / (name + LEGACY_SUFFIX)
        if hook.exists() and not is_ours(hook):
            if legacy.exists():
                raise FatalError(
                    f"{hook} is not quipu's and {legacy} already exists\n"
                    f"- merge the two by hand, remove one, then run `quipu hooks install` again"
                )
            os.rename(hook, legacy)
        tmp = hook.with_name(f".{name}.quipu-tmp")
        tmp.write_text(_stub(name), encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, hook)
        done.append(name)
    return done


def uninstall(root: Path) -> list[str]:
    directory = hooks_dir(root)
    removed = []
    for name in HOOKS:
        hook = directory / name
        legacy = directory / (name + LEGACY_SUFFIX)
        if hook.exists() and is_ours(hook):
            hook.unlink()
            removed.append(name)
        if legacy.exists() and not hook.exists():
            os.rename(legacy, hook)
    return removed


def status(root: Path) -> dict[str, str]:
    directory = hooks_dir(root)
    out = {}
    for name in HOOKS:
        hook = directory / name
        if not hook.exists():
            out[name] = "missing"
        elif is_ours(hook):
            out[name] = "installed"
        else:
            out[name] = "foreign"
    return out
