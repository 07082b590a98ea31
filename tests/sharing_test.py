"""Two machines share one store through an ordinary git remote; decisions merge without conflicts."""
from __future__ import annotations

from pathlib import Path

from quipu.index import index
from quipu.store.store import Store
from testing.fixtures import git, make_store, memory


def test_two_clones_that_label_the_same_memory_merge_without_conflicts(tmp_path: Path) -> None:
    laptop = make_store(tmp_path / "laptop")
    laptop.add(memory("vpn-host", "VPN host is vpn1.internal", "Connect to vpn1.internal."))
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(laptop.root), str(remote))
    git(laptop.root, "remote", "add", "origin", str(remote))
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "desktop"))
    desktop = Store(tmp_path / "desktop")

    # Both machines decide things about the same memory, and each adds one of its own.
    laptop.label("vpn-host", "unverified", detail="host did not answer")
    laptop.add(memory("laptop-note", "Laptop note", "written on the laptop"))
    desktop.label("vpn-host", "reviewed", detail="checked by hand")
    desktop.add(memory("desktop-note", "Desktop note", "written on the desktop"))

    git(laptop.root, "push", "-q", "origin", "main")
    git(desktop.root, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "main")

    assert git(desktop.root, "status", "--porcelain") == ""
    rows = {r["id"]: r for r in index.rows(desktop, "SELECT id, labels FROM memories")}
    assert set(rows) == {"vpn-host", "laptop-note", "desktop-note"}
    assert rows["vpn-host"]["labels"].split() == ["reviewed", "unverified"]

    # After the merge, one decision can still be undone on its own.
    label_commit = next(e.commit for e in desktop.log(memory="vpn-host") if e.trailers.get("Quipu-Label") == "unverified")
    desktop.undo(commit=label_commit)
    rows = {r["id"]: r for r in index.rows(desktop, "SELECT id, labels FROM memories")}
    assert rows["vpn-host"]["labels"].split() == ["reviewed"]
