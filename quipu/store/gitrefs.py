"""git's refs and config read and written with the standard library, as git's files backend
does (for ``quipu.store.gitobj``'s writers).

Contract:
- ``branch(gitdir)`` is the branch HEAD points at (None when detached), ``read_ref`` its commit
  (loose ref, then packed-refs, in the common git dir of a linked worktree).
- ``update_ref`` is git's compare-and-swap of a branch with its reflog: "ok", "moved" (someone
  moved the branch: rebuild on the new tip) or "locked" (another program holds the ref's lock).
  Loose and packed refs with git's default reflogs are written here as git writes them (the
  ``.lock`` file, the check, the reflog entries, the rename); anything else (reftable, a config
  that includes other files) goes through ``git update-ref``, hooks off.
- ``identity(gitdir)`` is git's ``user.name`` and ``user.email`` from its config files (as
  libgit2 reads them; a config that includes other files is asked of ``git config``), or None.
"""
from __future__ import annotations

import contextlib
import os
import time

from quipu.errors import ConflictError, FatalError
from quipu.prompt.locate import common_dir as common_dir, read_ref as read_ref  # one reader of refs, the hook's


def _safe_ref(ref: str) -> bool:
    parts = ref.split("/")
    return ref.startswith("refs/") and all(p not in ("", ".", "..") for p in parts) and "\x00" not in ref


def branch(gitdir: str) -> str | None:
    """The ref HEAD names (``refs/heads/main``), or None when HEAD is detached or unreadable."""
    try:
        with open(os.path.join(gitdir, "HEAD"), "rb") as fh:
            head = fh.read(1024).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return None
    ref = head[4:].strip()
    return ref if _safe_ref(ref) else None


def git_env() -> dict[str, str]:
    """The environment for git children: no variable points them at another repository or index."""
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
                                                           "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR")}
    env["LC_ALL"] = "C"
    return env


def update_ref(gitdir: str, ref: str, new: str, old: str, message: str, who: tuple[str, str]) -> str:
    """Move ``ref`` from ``old`` to ``new`` as git does: "ok", "moved" (it no longer holds ``old``)
    or "locked" (another program holds its lock).

    In a repository of loose and packed refs (git's "files" backend) this is git's own protocol,
    done here as libgit2 does it: create ``<ref>.lock`` exclusively, check the ref still holds
    ``old``, write ``new`` into the lock, append the reflog entries (the branch's, and HEAD's when
    HEAD names the branch), rename the lock over the ref. Anything else
    (reftable, a bare repository, a config that includes other files) is left to ``git update-ref``.
    ``core.logAllRefUpdates=false`` appends only to reflogs that exist, as git does."""
    create_logs = _reflogs(gitdir)
    if create_logs is None:
        return _update_ref_with_git(gitdir, ref, new, old, message)
    common = common_dir(gitdir)
    path = os.path.join(common, ref)
    lock = path + ".lock"
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return "locked"
    except FileNotFoundError:
        os.makedirs(os.path.dirname(lock), exist_ok=True)
        return update_ref(gitdir, ref, new, old, message, who)
    try:
        with open(fd, "wb", closefd=True) as fh:
            if read_ref(gitdir, ref) != old:
                os.unlink(lock)
                return "moved"
            fh.write(new.encode("ascii") + b"\n")
        line = f"{old} {new} {person(who)}\t{message.replace(chr(10), ' ')}\n".encode("utf-8")
        logs = [os.path.join(common, "logs", ref)] + ([os.path.join(gitdir, "logs", "HEAD")] if branch(gitdir) == ref else [])
        for log in logs:
            if not create_logs and not os.path.exists(log):
                continue
            os.makedirs(os.path.dirname(log), exist_ok=True)
            with open(log, "ab") as fh:
                fh.write(line)
        os.replace(lock, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        raise
    return "ok"


def _reflogs(gitdir: str) -> bool | None:
    """Whether a branch's reflog is created when missing (git's default in a repository with a
    worktree), False when only an existing one is appended to; None when git must write the ref
    (reftable, a bare repository, a config that includes others)."""
    if os.path.exists(os.path.join(common_dir(gitdir), "reftable")):
        return None
    found = config(gitdir)
    if found is None or found.get("extensions.refstorage", "files").lower() != "files" or _true(found.get("core.bare")):
        return None
    return _true(found.get("core.logallrefupdates", "true")) or found["core.logallrefupdates"].lower() == "always"


def _true(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "yes", "on", "1")


def _update_ref_with_git(gitdir: str, ref: str, new: str, old: str, message: str) -> str:
    code, err = run_git(["--git-dir", gitdir, "-c", "core.hooksPath=/dev/null", "update-ref", "-m", message, ref, new, old])
    if code == 0:
        return "ok"
    if read_ref(gitdir, ref) != old:
        return "moved"
    if b".lock" in err or os.path.exists(os.path.join(common_dir(gitdir), ref + ".lock")):
        return "locked"  # (git speaks English here: LC_ALL=C)
    raise ConflictError(f"git could not move {ref}: {err.decode('utf-8', 'replace').strip()}\n"
                        "- run `quipu doctor` to check the store")


def run_git(args: list[str]) -> tuple[int, bytes]:
    """Run ``git ARGS`` (stdin and stdout empty); its exit code and what it wrote on stderr.
    ``posix_spawn`` directly: a write does not load the subprocess module for one short child."""
    read, write = os.pipe()
    try:
        pid = os.posix_spawnp("git", ["git", *args], git_env(), file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, write, 2),
        ])
    except FileNotFoundError:
        os.close(read)
        raise FatalError("git is not installed (quipu moves a store's branch with `git update-ref`); "
                         "nothing was written\n- install git, then try again") from None
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    with os.fdopen(read, "rb") as fh:
        err = fh.read()
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:  # pragma: no cover - retried by Python itself since 3.5
            continue
    return os.waitstatus_to_exitcode(status), err



def person(who: tuple[str, str], when: float | None = None) -> str:
    """``Name <email> seconds +zone``, as a commit and a reflog entry name their author."""
    stamp = time.time() if when is None else when
    offset = (time.localtime(stamp).tm_gmtoff or 0) // 60
    sign = "-" if offset < 0 else "+"
    return f"{_clean(who[0])} <{_clean(who[1])}> {int(stamp)} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"


def _clean(text: str) -> str:
    """What libgit2 keeps of a name or email: no angle brackets, no newline, no outer spaces."""
    return text.replace("<", "").replace(">", "").replace("\n", "").strip()


def identity(gitdir: str) -> tuple[str, str] | None:
    """``(user.name, user.email)`` from git's config files, last one wins; None when either is unset."""
    found = config(gitdir)
    if found is None:
        return _identity_from_git(gitdir)
    name, email = found.get("user.name"), found.get("user.email")
    return (name, email) if name and email else None


def _config_files(gitdir: str) -> list[str]:
    env = os.environ
    home = env.get("HOME") or os.path.expanduser("~")
    files = [] if env.get("GIT_CONFIG_NOSYSTEM") else [env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    if env.get("GIT_CONFIG_GLOBAL"):
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        files += [os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "git", "config"),
                  os.path.join(home, ".gitconfig")]
    return [*files, os.path.join(common_dir(gitdir), "config")]


def config(gitdir: str) -> dict[str, str] | None:
    """git's config as {"section.key": value} (lower-case names; subsections kept as written,
    ``section "sub".key``), the last file and line winning; None when a file includes others
    (the caller asks git itself)."""
    found: dict[str, str] = {}
    for path in _config_files(gitdir):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        if "[include" in text.lower():
            return None
        found.update(_entries(text))
    return found


def _entries(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            end = line.find("]")
            head = line[1:end].strip() if end > 0 else ""
            name, _, sub = head.partition(" ")
            section = f"{name.lower()} {sub.strip()}" if sub.strip() else name.lower()
            line = line[end + 1:].strip() if end > 0 else ""
        if not line or line[0] in "#;":
            continue
        key, eq, value = line.partition("=")
        out[f"{section}.{key.strip().lower()}"] = _config_value(value) if eq else "true"
    return out


def _config_value(raw: str) -> str:
    out, quoted, i = [], False, 0
    raw = raw.strip()
    while i < len(raw):
        ch = raw[i]
        if ch == '"':
            quoted = not quoted
        elif ch == "\\" and i + 1 < len(raw):
            i += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i], raw[i]))
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip() if not quoted else "".join(out)


def _identity_from_git(gitdir: str) -> tuple[str, str] | None:
    import subprocess

    values = []
    for key in ("user.name", "user.email"):
        done = subprocess.run(["git", "--git-dir", gitdir, "config", "--get", key], stdin=subprocess.DEVNULL,
                              capture_output=True, env=git_env(), check=False)
        values.append(done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else "")
    return (values[0], values[1]) if all(values) else None
