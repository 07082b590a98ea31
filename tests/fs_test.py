"""quipu.prompt._fs answers as os and os.path do, for the paths the prompt hook meets."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from quipu.prompt import _fs

PATHS = ["", ".", "..", "/", "//", "///", "a", "a/", "/a/b/", "a//b", "a/./b", "a/../b", "../a", "/../a", "//a/b",
         "///a/b", "/a/b/../../..", "a/b/c/../../../..", "~", "~/x", "~other/x", "x/~", "/tmp/./q/../r//s/"]


@pytest.mark.parametrize("path", PATHS)
def test_path_arithmetic_matches_os_path(path: str) -> None:
    assert _fs.normpath(path) == os.path.normpath(path)
    assert _fs.dirname(path) == os.path.dirname(path)
    assert _fs.abspath(path or ".") == os.path.abspath(path or ".")
    assert _fs.expanduser(path) == os.path.expanduser(path)
    for other in ("b", "/c", "", "d/"):
        assert _fs.join(path, other) == os.path.join(path, other)


def test_file_questions_match_os_path(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    os.symlink(tmp_path / "f", tmp_path / "link")
    for name in ("f", "d", "link", "missing", "f/inside"):
        target = str(tmp_path / name)
        assert (_fs.isfile(target), _fs.isdir(target)) == (os.path.isfile(target), os.path.isdir(target)), name
    _fs.makedirs(str(tmp_path / "new" / "deeper" / "deepest"))
    _fs.makedirs(str(tmp_path / "new" / "deeper"))  # already there: fine
    assert (tmp_path / "new" / "deeper" / "deepest").is_dir()
    assert _fs.join(tmp_path, "f") == str(tmp_path / "f")  # path-like arguments


def test_a_private_folder_is_a_real_folder_of_this_users_closed_to_others(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o755)
    os.symlink(closed, tmp_path / "link")
    (tmp_path / "file").write_text("x")
    (tmp_path / "file").chmod(0o600)
    found = {name: _fs.private_dir(str(tmp_path / name)) for name in ("closed", "open", "link", "file", "missing")}
    assert found == {"closed": True, "open": False, "link": False, "file": False, "missing": False}


def test_environ_is_the_process_environment_without_importing_os() -> None:
    code = ("import sys; sys.path.append(%r); from quipu.prompt import _fs; env = _fs.environ(); "
            "print(env['QUIPU_FS_PROBE'], 'os' in sys.modules)") % str(Path(__file__).resolve().parent.parent)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True,
                          env={"QUIPU_FS_PROBE": "café", "PATH": os.environ.get("PATH", "")})
    assert done.stdout.split() == ["café", "False"]
    os.environ["QUIPU_FS_PROBE_LIVE"] = "set later"  # with os loaded, changes made through it are seen
    try:
        assert _fs.environ()["QUIPU_FS_PROBE_LIVE"] == "set later"
    finally:
        del os.environ["QUIPU_FS_PROBE_LIVE"]
