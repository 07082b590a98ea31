"""Git hooks in the store that keep the index fresh, chained with the user's own hooks.

Contract:
- ``install`` writes a small POSIX-sh stub for pre-commit, post-commit, post-merge,
  post-checkout and post-rewrite into the store's hooks folder (``place``). That is the folder
  git uses for the store (``core.hooksPath`` and worktrees are honoured) while it lies in the
  store, its git dir or its work tree, and a store-local ``core.hooksPath`` says so. When git's
  folder lies elsewhere (a global or system ``core.hooksPath``, such as git-secrets' or a
  company's, or a local one pointing out of the store), every repository shares it: quipu never
  writes there. It writes into the store's own ``<git dir>/hooks`` and sets ``core.hooksPath``
  to it in the store's ``.git/config`` (``quipu.hooksPathBefore`` keeps the local value it
  replaced, if any). Each stub then runs that shared folder's hook of the same name after its own
  checks, with the same arguments and stdin, and keeps its exit status; a hook there that is
  quipu's is skipped. The shared folder's other hooks no longer run for the store (``notes``).
- A hook that is not ours in the store's folder is moved to ``<hook>.quipu-legacy`` and run
  first with the same arguments and stdin; its exit status is kept (a failing pre-commit still
  stops the commit). Re-installing is idempotent; a foreign hook where a legacy one already
  exists is a clear error.
- ``uninstall`` removes our stubs and moves a legacy hook back, byte for byte (same file, so
  the same mode), and puts back the store-local ``core.hooksPath`` as it was before quipu set it.
  Quipu's stubs in a shared folder outside the store (an older quipu wrote them there) are removed
  too and the legacy hooks beside them moved back; ``status`` reports them as ``outside`` and
  ``notes`` says how to repair.
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
from quipu.lite import NamedTuple
from quipu.prompt import launch

HOOKS = ("pre-commit", "post-commit", "post-merge", "post-checkout", "post-rewrite")
MARKER = "# quipu-managed-hook v1"
LEGACY_SUFFIX = ".quipu-legacy"
KEY = "core.hooksPath"
BEFORE = "quipu.hooksPathBefore"

_STUB = """#!/bin/sh
{marker}
# Keeps quipu's search index fresh. Your own hook, if you had one, is {name}{legacy} and runs first.
# shared: the folder git would take hooks from without this store's core.hooksPath, when it lies
# outside the store; its hook of the same name runs next.
shared={shared}
input=""
[ "$(basename "$0")" = post-rewrite ] && input=$(cat)
chain() {{
  if [ -n "$input" ]; then printf '%s\\n' "$input" | "$@"; else "$@"; fi
}}
rc=0
if [ -x "$0{legacy}" ]; then
  chain "$0{legacy}" "$@"
  rc=$?
fi
if [ -n "$shared" ] && [ -x "$shared/{name}" ] && ! grep -qF '{marker}' "$shared/{name}" 2>/dev/null; then
  chain "$shared/{name}" "$@" || {{ r=$?; [ $rc -eq 0 ] && rc=$r; }}
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
# shared: the folder git would take hooks from without this store's core.hooksPath, when it lies
# outside the store; its hook of the same name runs after quipu's checks.
shared={shared}
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
if [ -n "$shared" ] && [ -x "$shared/{name}" ] && ! grep -qF '{marker}' "$shared/{name}" 2>/dev/null; then
  exec "$shared/{name}" "$@"
fi
exit 0
"""


class Place(NamedTuple):
    """Where the store's hooks go, and what git's configuration says about it."""

    folder: Path  # where quipu's stubs go (and are looked for)
    other: Path  # the folder git uses for the store when quipu's own core.hooksPath is left out
    scope: str  # where git's core.hooksPath for ``other`` comes from ("" for git's default)
    shared: Path | None  # ``other``, when it lies outside the store (chained, searched for strays)
    redirect: bool  # ``folder`` is not ``other``: a store-local core.hooksPath is needed
    redirected: bool  # the store-local core.hooksPath quipu set is in place
    before: str  # the store-local core.hooksPath quipu replaced ("" for none)
    top: str  # the store's work tree, where git runs hooks and resolves a relative core.hooksPath


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise FatalError(f"cannot run git in {root}: {exc}\n- is git installed?") from None


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def place(root: Path) -> Place:
    """Where the hooks of the store at ``root`` go: the folder git uses for it when that lies in the
    store (its git dir, or its work tree by the store's own config), else the store's own
    ``<git dir>/hooks``. Paths are compared resolved, so a symlink cannot lead a hook out."""
    done = _git(root, "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
    lines = done.stdout.splitlines()
    if done.returncode or len(lines) < 3:
        raise FatalError(f"cannot find the git hooks folder of {root}: {done.stderr.strip()}\n"
                         f"- is it a git repository?")
    top, gitdir = os.path.realpath(lines[0]), os.path.realpath(lines[1])
    common = os.path.realpath(os.path.join(root, lines[2]))
    own = os.path.realpath(os.path.join(common, "hooks"))
    mark = _git(root, "config", "--local", "--get", BEFORE)
    before = mark.stdout.rstrip("\n") if mark.returncode == 0 else None
    scope, other, redirected = "", own, False
    listed = _git(root, "config", "--show-scope", "--type=path", "--get-all", KEY).stdout
    for line in listed.splitlines():
        where, _, value = line.partition("\t")
        path = os.path.realpath(os.path.join(top, value))
        if before is not None and where == "local" and path == own:
            redirected = True
            if not before:
                continue
            path = os.path.realpath(os.path.join(top, os.path.expanduser(before)))
        scope, other = where, path
    inside = any(_within(other, folder) for folder in (top, gitdir, common))
    if other == own or (scope in ("local", "worktree") and inside):
        return Place(Path(other), Path(other), scope, None, False, redirected, before or "", top)
    return Place(Path(own), Path(other), scope, None if inside else Path(other), True, redirected,
                 before or "", top)


def hooks_dir(root: Path) -> Path:
    """The folder quipu's hooks for the store at ``root`` go into."""
    return place(root).folder


def is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")[:400]
    except OSError:
        return False


def _stub(name: str, shared: Path | None = None) -> str:
    # Not realpath: a venv's bin/python is a symlink to the base interpreter, and only the
    # unresolved path makes Python find the venv (and the quipu installed in it).
    # -I and the package's own folder (quipu.prompt.launch): the stub runs in the store's root, where a
    # committed quipu/ folder would otherwise be imported instead of quipu.
    python = launch.interpreter()
    template = _PRE_COMMIT_STUB if name == "pre-commit" else _STUB
    return template.format(marker=MARKER, name=name, legacy=LEGACY_SUFFIX, python=shlex.quote(python),
                           shared=shlex.quote(str(shared)) if shared else "''",
                           boot=shlex.quote(launch.BOOT), package=shlex.quote(launch.package_parent()))


def _config(root: Path, *args: str) -> None:
    done = _git(root, "config", "--local", *args)
    if done.returncode:
        raise FatalError(f"cannot change {root}'s git config (git config --local {' '.join(args)}): "
                         f"{done.stderr.strip()}")


def install(root: Path) -> list[str]:
    where = place(root)
    directory = where.folder
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
        tmp.write_text(_stub(name, where.shared), encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, hook)
        done.append(name)
    if where.redirect and not where.redirected:
        current = _git(root, "config", "--local", "--get", KEY)
        own = str(directory)
        _config(root, BEFORE, current.stdout.rstrip("\n") if current.returncode == 0 else "")
        _config(root, "--replace-all", KEY, os.path.relpath(own, where.top) if _within(own, where.top) else own)
    return done


def _remove(directory: Path) -> list[str]:
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


def uninstall(root: Path) -> list[str]:
    where = place(root)
    removed = _remove(where.folder)
    if where.redirected:
        if where.before:
            _config(root, "--replace-all", KEY, where.before)
        else:
            _config(root, "--unset-all", KEY)
        _config(root, "--unset-all", BEFORE)
        if _git(root, "config", "--local", "--get-regexp", r"^quipu\.").returncode:
            _git(root, "config", "--local", "--remove-section", "quipu")
    if where.shared is not None:
        removed += [name for name in _remove(where.shared) if name not in removed]
    return removed


def strays(where: Place) -> list[str]:
    """quipu's hooks in the shared folder outside the store (which an older quipu wrote into)."""
    shared = where.shared
    return [name for name in HOOKS if shared is not None and is_ours(shared / name)]


def status(root: Path) -> dict[str, str]:
    """Each hook: installed, missing, foreign (not quipu's), inactive (quipu's, but git runs
    another folder's hooks for the store), or outside (quipu's, in a folder outside the store)."""
    where = place(root)
    outside = strays(where)
    out = {}
    for name in HOOKS:
        hook = where.folder / name
        if name in outside:
            out[name] = "outside"
        elif not hook.exists():
            out[name] = "missing"
        elif not is_ours(hook):
            out[name] = "foreign"
        elif where.redirect and not where.redirected:
            out[name] = "inactive"
        else:
            out[name] = "installed"
    return out


def notes(root: Path) -> list[str]:
    """What a person should know about where the store's hooks are, one sentence a line."""
    where = place(root)
    out = []
    outside = strays(where)
    if outside:
        out.append(f"quipu's {', '.join(outside)} hook(s) are in {where.shared}, outside this store, and git runs "
                   f"them in every repository that uses that folder (an older quipu put them there); to repair it, "
                   f"run `quipu hooks uninstall` (it removes them there and moves your own hooks back), then "
                   f"`quipu hooks install`")
    if where.redirect and where.redirected:
        origin = f"the {where.scope} core.hooksPath, {where.other}"
        if where.shared is None:
            out.append(f"the store runs its own hooks from {where.folder} (quipu set core.hooksPath in its "
                       f".git/config), not those of {origin}")
        else:
            others = _other_hooks(where.shared)
            out.append(f"the store runs its own hooks from {where.folder} (quipu set core.hooksPath in its "
                       f".git/config), not those of {origin}, a folder outside the store that other repositories "
                       f"may share; each of quipu's hooks runs the one of the same name there after its own checks"
                       + (f"; its other hooks ({', '.join(others)}) do not run for the store" if others else ""))
    elif where.redirect:
        out.append(f"git runs the hooks of {where.other} (the {where.scope} core.hooksPath) for the store; "
                   f"`quipu hooks install` puts quipu's in the store's own {where.folder} and leaves that folder as it is")
    return out


def _other_hooks(folder: Path) -> list[str]:
    try:
        found = sorted(p.name for p in folder.iterdir() if p.is_file() and os.access(p, os.X_OK))
    except OSError:
        return []
    return [name for name in found if name not in HOOKS and "." not in name]
