"""A bulk write's new worktree files (quipu.store.journal.NewFiles), made in two threads while the
tree is built: the status git's index records of each, nothing written through a symlink at a
file's path or a folder's, and a refusal raised in the writer as itself, with what was made undone."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import json, os, sys
from quipu.store.journal import NewFiles
from quipu.errors import UnsafeStore

workdir = sys.argv[1]
files = {f"memories/{n % 7:02d}/note-{n:04d}.md": f"note {n}\n".encode() * (n % 5 + 1) for n in range(600)}
files["memories/sy/linked.md"] = b"never written through the link\n"
files["memories/bad/inside.md"] = b"never written into a symlinked folder\n"
made = NewFiles(workdir, files)
out = {}
try:
    stats = made.join()
    out["error"] = None
except UnsafeStore as exc:
    stats = made.made
    out["error"] = "UnsafeStore: " + str(exc).splitlines()[0]
out["made"] = {rel: [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_dev]
               for rel, st in stats.items()}
if sys.argv[2:] == ["undo"]:
    made.undo(workdir)
print(json.dumps(out))
"""


def _run(workdir: Path, *extra: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(workdir), *extra], capture_output=True,
                          text=True, timeout=120, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _worktree(tmp_path: Path, name: str, *, bad_folder: bool) -> tuple[Path, Path]:
    workdir = tmp_path / name
    outside = tmp_path / f"{name}-outside"
    (workdir / "memories" / "sy").mkdir(parents=True)
    outside.mkdir()
    (outside / "target.md").write_text("outside\n")
    os.symlink(outside / "target.md", workdir / "memories" / "sy" / "linked.md")
    if bad_folder:
        os.symlink(outside, workdir / "memories" / "bad")
    return workdir, outside


def test_new_files_are_made_with_their_status_and_nothing_is_written_through_a_link(tmp_path: Path) -> None:
    workdir, outside = _worktree(tmp_path, "store", bad_folder=False)
    result = _run(workdir)
    assert result["error"] is None
    made = result["made"]
    assert isinstance(made, dict)
    assert len(made) == 601 and "memories/sy/linked.md" not in made  # left to write_worktree
    for rel, (ino, size, mtime_ns, ctime_ns, st_mode, dev) in made.items():
        st = os.lstat(workdir / rel)
        assert (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_dev) == (
            ino, size, mtime_ns, ctime_ns, st_mode, dev)
    assert (workdir / "memories/03/note-0010.md").read_bytes() == b"note 10\n"
    assert (outside / "target.md").read_text() == "outside\n" and sorted(os.listdir(outside)) == ["target.md"]


def test_a_symlinked_folder_is_refused_as_itself_and_undo_removes_what_was_made(tmp_path: Path) -> None:
    workdir, outside = _worktree(tmp_path, "store", bad_folder=True)
    result = _run(workdir, "undo")
    assert str(result["error"]).startswith("UnsafeStore: refusing to use") and "memories/bad" in str(result["error"])
    assert sorted(os.listdir(outside)) == ["target.md"]  # nothing went through the link
    left = [p for p in (workdir / "memories").rglob("*.md") if not p.is_symlink()]
    assert left == []  # undo removed every file the work made before the refusal
