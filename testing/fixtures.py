"""Store builders shared by tests and benchmarks."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from quipu.index import index
from quipu.store.memory import Memory, now_utc, render_memory
from quipu.store.store import Store

REPO_ROOT = Path(__file__).resolve().parent.parent
PROMPT_HOOK = REPO_ROOT / "hooks" / "prompt_submit.py"


def make_store(path: Path) -> Store:
    store, _ = Store.init(path)
    return store


def memory(memory_id: str, title: str, body: str = "", **fields: Any) -> Memory:
    values: dict[str, Any] = {"id": memory_id, "title": title, "class": "project-note", "created": now_utc()}
    for key, value in fields.items():
        values["class" if key == "cls" else key] = value
    return Memory.create(values, body)


def add_all(store: Store, memories: Iterable[Memory]) -> None:
    for item in memories:
        store.add(item)
    index.ensure_fresh(store)


def git(root: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=check).stdout


def quipu(*args: str, env: dict[str, str] | None = None, input: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `python -m quipu` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "quipu", *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})}, input=input, cwd=cwd,
    )


def real_python() -> str:
    """The interpreter quipu runs under, by absolute path (a venv's python, never a pyenv shim)."""
    return os.path.abspath(sys.executable)


def run_prompt_hook(event: bytes | str, env: dict[str, str] | None = None, extra_args: Sequence[str] = (),
                    cwd: str | Path | None = None, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    """Run the prompt hook exactly as Claude Code would: the real interpreter, -I -S, event on stdin.
    ``timeout`` only catches a hang (subprocess.TimeoutExpired); it is no measure of speed."""
    data = event.encode() if isinstance(event, str) else event
    return subprocess.run(
        [real_python(), "-I", "-S", str(PROMPT_HOOK), *extra_args],
        input=data, capture_output=True, env={**os.environ, **(env or {})}, timeout=timeout, cwd=cwd,
    )


EXAMPLE_MEMORIES = Path(__file__).resolve().parent / "example_memories.json"


def example_memories() -> list[Memory]:
    import json

    out = []
    for item in json.loads(EXAMPLE_MEMORIES.read_text(encoding="utf-8")):
        item = dict(item)
        body = item.pop("body", "")
        item.setdefault("created", now_utc())
        out.append(Memory.create(item, body + "\n"))
    return out


def example_store(path: Path) -> Store:
    """A store holding the example memories (realistic notes of a small web shop)."""
    store = make_store(path)
    memories = example_memories()
    add_all(store, memories)
    for new in memories:  # a supersession is a decision, an event of the old memory, as quipu add writes it
        for old in new.supersedes:
            store.supersede(old, new.id)
    index.ensure_fresh(store)
    return store


def indexed_head(root: Path) -> str | None:
    """The commit a store's index was built from, read directly from its SQLite file (None if unreadable)."""
    import sqlite3

    try:
        db = sqlite3.connect(f"file:{root / '.cache' / 'index.sqlite'}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'head'").fetchone()
            return str(row[0]) if row else None
        finally:
            db.close()
    except sqlite3.Error:
        return None


def bulk_store(path: Path, memories: Iterable[Memory], *, checkout: bool = True, message: str = "") -> tuple[Store, int]:
    """A store at ``path`` holding ``memories`` in one commit on top of the init commit."""
    store, created = Store.init(path)
    if not created:
        raise RuntimeError(f"{path} already holds a store; pass an empty folder")
    parent = store.head()
    summary = message or "quipu: bulk import"
    proc = subprocess.Popen(
        ["git", "-C", str(path), "fast-import", "--quiet", "--done", "--depth=0"],
        stdin=subprocess.PIPE,
    )
    assert proc.stdin is not None
    write = proc.stdin.write
    msg = f"{summary}\n\nQuipu-Action: import\nQuipu-Memory: store\n".encode()
    stamp = int(time.time())
    write(b"commit refs/heads/main\n")
    write(b"committer Quipu Bench <bench@example.invalid> %d +0000\n" % stamp)
    write(b"data %d\n%s\n" % (len(msg), msg))
    write(b"from %s\n" % parent.encode())
    count = 0
    for item in memories:
        data = render_memory(item)
        write(b"M 100644 inline %s\ndata %d\n" % (item.path.encode(), len(data)))
        write(data)
        write(b"\n")
        count += 1
    write(b"done\n")
    proc.stdin.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    if checkout:
        subprocess.run(["git", "-C", str(path), "reset", "-q", "--hard", "HEAD"], check=True)
    return Store(path), count


# sh -c SCRIPT sh FOLDER... -- COMMAND...: mount each FOLDER read-only over itself, then run COMMAND.
_READ_ONLY_MOUNTS = ('while [ "$1" != -- ]; do mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" || exit 97; '
                     'shift; done; shift; exec "$@"')


def read_only_mounts_work() -> bool:
    """Whether this machine lets a test mount folders read-only in a private namespace
    (``unshare --user --map-root-user --mount``: no privileges needed where user namespaces are on)."""
    import tempfile

    if not _have("unshare"):
        return False
    with tempfile.TemporaryDirectory() as folder:
        probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _READ_ONLY_MOUNTS,
                                "sh", folder, "--", "sh", "-c", 'touch "$1/x" 2>/dev/null && exit 1 || exit 0', "sh", folder],
                               capture_output=True, check=False)
    return probe.returncode == 0


def _have(program: str) -> bool:
    import shutil

    return shutil.which(program) is not None


def quipu_read_only(read_only: Sequence[Path], *args: str, env: dict[str, str] | None = None,
                    input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m quipu ARGS` with the folders ``read_only`` mounted read-only (EROFS even for
    root, the way a store on a read-only disk behaves), in a mount namespace of its own."""
    return subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _READ_ONLY_MOUNTS, "sh",
         *map(str, read_only), "--", sys.executable, "-m", "quipu", *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})}, input=input,
    )


# Four short notes on different topics (id, title): the store most index and search tests start from.
TOPIC_NOTES = [
    ("deploy-note", "Production deploys go through the blue green pipeline"),
    ("pytest-note", "Run the tests with pytest and the xdist plugin"),
    ("docker-note", "The docker images are built nightly by the release job"),
    ("yaml-note", "YAML is read with the safe loader only"),
]


def alive(pid: int | None) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True  # no /proc: the signal went through


def wait_for(predicate: Any, what: str, limit: float = 30.0) -> None:
    """Poll until ``predicate()`` holds; the bound only catches a hang, it measures nothing."""
    import pytest

    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def used_as_it_loads(module: str, names: Iterable[str]) -> set[str]:
    """Those of the modules ``names`` that the standard library's ``module`` uses while it is being
    imported (a statement at the top level of its source naming ``NAME.``), which no stand-in can
    spare: Python 3.12's pathlib computes ``fnmatch.translate('_')`` as it loads, 3.11's and
    3.13's only in calls."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin
    sources = [Path(spec.origin)]
    if spec.submodule_search_locations:  # a package (3.13's pathlib): each of its modules
        sources = [p for folder in spec.submodule_search_locations for p in Path(folder).glob("*.py")]
    top = [line for path in sources for line in path.read_text(encoding="utf-8").splitlines()
           if line[:1] not in ("", " ", "\t", "#") and not line.startswith(("import ", "from ", "def ", "class "))]
    return {name for name in names if any(f"{name}." in line for line in top)}


def synced_clones(tmp_path: Path, n: int) -> tuple[Path, list[Store]]:
    """A bare remote under ``tmp_path`` and ``n`` stores sharing it (``c0`` made and pushed first,
    the rest cloned from the remote)."""
    from quipu.sync import sync

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    first = make_store(tmp_path / "c0")
    sync.set_remote(first, str(remote))
    sync.sync(first)
    return remote, [first] + [sync.clone(str(remote), tmp_path / f"c{i}")[0] for i in range(1, n)]


def hand_commit(root: Path, message: str, files: dict[str, bytes | None], author: str | None = None) -> str:
    """A commit made with plain git, as a person or another tool would: ``files`` written (None:
    removed) and committed with ``message``; returns its id."""
    for rel, data in files.items():
        if data is None:
            git(root, "rm", "-q", rel)
            continue
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        git(root, "add", rel)
    git(root, "commit", "-q", "--no-verify", *([f"--author={author}"] if author else []), "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def plain_clone(tmp_path: Path, remote: Path, name: str = "mallory") -> Path:
    """A person's plain git clone of a shared store (no quipu), committing as ``name``."""
    clone = tmp_path / name
    git(tmp_path, "clone", "-q", "-b", "main", str(remote), str(clone))
    git(clone, "config", "user.name", name)
    git(clone, "config", "user.email", f"{name}@example.com")
    return clone


def mcp_calls(store: Path, cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    """The MCP server as `quipu install claude` registers it, each tool called in one session:
    (is_error, text) for each."""
    import asyncio

    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CODE_SESSION_ID"}
    env["QUIPU_STORE"] = str(store)
    params = StdioServerParameters(command=sys.executable, args=["-I", str(REPO_ROOT / "hooks" / "quipu_mcp.py")],
                                   env=env, cwd=str(cwd))

    async def talk() -> list[tuple[bool, str]]:
        async with Client(params) as client:
            out = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                out.append((bool(result.is_error), "".join(c.text for c in result.content if c.type == "text")))
            return out

    return asyncio.run(talk())
