"""Creating a store: a git repository with the template's files in its first commit.

Contract: ``init_store(cls, path)`` makes a store at ``path`` (an existing store is returned as it
is, with ``created`` False); a folder holding anything but ``.git`` is refused, never overwritten.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from quipu.errors import NoStore
from quipu.prompt import locate
from quipu.store.trailers import format_message

if TYPE_CHECKING:
    from quipu.store.store import Store


def init_store(cls: type[Store], path: Path) -> tuple[Store, bool]:
    """Create a store at ``path`` from the template; returns (store, created)."""
    import pygit2

    from quipu.store import assets, gitobj, gitstore, indexlock
    from quipu.store.store import CONFIG_NAME

    path = Path(path).expanduser().absolute()
    if (path / CONFIG_NAME).is_file() and locate.git_dir(str(path)):
        return cls(path, "init"), False
    refused = init_refusal(path)
    if refused:
        raise NoStore(refused)
    path.mkdir(parents=True, exist_ok=True)
    if locate.git_dir(str(path)) is None:
        pygit2.init_repository(str(path), initial_head="main")
    store = cls(path, "init")
    template = assets.template_dir()
    files: dict[str, bytes] = {}
    for item in sorted(template.rglob("*")):
        if item.is_file():
            rel = item.relative_to(template).as_posix()
            if rel == "gitignore":
                rel = ".gitignore"
            files[rel] = item.read_bytes()
    repo = store.repo
    sig = gitstore.signature(repo)
    builder_changes = files
    if repo.head_is_unborn:
        tree = pygit2.Oid(hex=gitobj.build_tree(gitobj.Objects(repo.path), None, builder_changes))
        message = format_message("quipu: init store", {"Quipu-Action": "init", "Quipu-Memory": "store"})
        repo.create_commit("HEAD", sig, sig, message, tree, [])
        for rel, data in files.items():
            target = path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        index = repo.index
        index.read(True)
        for rel in files:
            index.add(rel)
        index.write()
        repo.config["index.version"] = indexlock.INDEX_VERSION  # git's own new indexes, too
        indexlock.compact_index(repo.path, repo.workdir)
    else:
        store.commit(files, "quipu: init store", {"Quipu-Action": "init", "Quipu-Memory": "store"})
    return store, True


def init_refusal(path: Path) -> str | None:
    """Why ``quipu init`` will not create a store at ``path`` (the message and its fix), or None."""
    path = Path(path).expanduser().absolute()
    if path.exists() and not path.is_dir():
        return f"{path} exists and is not a folder\n- choose another path for the store"
    for above in path.parents:  # a store's files are its memories: another store would be committed into it
        if locate.is_store(str(above)):
            return (f"{path} is inside the quipu store {above}, which would commit it as its own files\n"
                    "- create the store elsewhere: inside a project, `quipu init PROJECT/.quipu`")
    if path.is_dir() and any(p.name != ".git" for p in path.iterdir()):
        inner = path / ".quipu"
        return (f"{path} is not empty and not a quipu store, so quipu will not mix its files with yours\n"
                f"- create the store in a folder of its own: `quipu init {inner}` (inside a project, it is found "
                f"from anywhere below {path})\n- or choose an empty or new folder")
    return None
