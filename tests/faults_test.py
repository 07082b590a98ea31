"""Faults a machine and other programs inflict: bad input, a full disk, a power cut, a corrupted
git index. Each ends in a one-line message or a store `quipu doctor` diagnoses and one command
repairs, with no committed memory lost."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testing.fixtures import REPO_ROOT, git, make_store, memory, read_only_mounts_work

_FULL_DISK = r'''
set -u
D=$1; PY=$2
mount -t tmpfs -o size=2m tmpfs "$D" || exit 97
cd "$3"
$PY -m quipu init "$D/store" >/dev/null 2>&1 || exit 98
$PY -m quipu --store "$D/store" add "first note about the pipeline" --title first >/dev/null || exit 99
dd if=/dev/zero of="$D/filler" bs=1k count=100000 2>/dev/null
$PY -m quipu --store "$D/store" add "$(head -c 6000 /dev/zero | tr '\0' x) pipeline" --title second 2>"$4"
echo "rc=$?"
cat "$4"
echo "commits=$(git -C "$D/store" rev-list --count HEAD)"
rm "$D/filler"
echo "status=$(GIT_OPTIONAL_LOCKS=0 git -C "$D/store" status --porcelain | tr '\n' ' ')"
echo "leftovers=$(find "$D/store" -path "$D/store/.cache" -prune -o \( -name '*.lock' ! -name quipu.lock -o -name '*.tmp' -o -name quipu-pending.json \) -print | tr '\n' ' ')"
$PY -m quipu --store "$D/store" add "third note about the pipeline" --title third >/dev/null; echo "again=$?"
echo "found=$($PY -m quipu --store "$D/store" search pipeline | grep -c score)"
git -C "$D/store" fsck --no-dangling >/dev/null 2>&1; echo "fsck=$?"
'''


@pytest.mark.skipif(not read_only_mounts_work(), reason="no unprivileged mount namespaces here")
def test_a_full_disk_is_one_message_exit_1_and_nothing_half_written(tmp_path: Path) -> None:
    """Issue 12: a full disk ended as "unexpected error" with a crash log (exit 3)."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _FULL_DISK, "sh",
                           str(folder), sys.executable, str(REPO_ROOT), str(tmp_path / "stderr")], capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    report = dict(line.split("=", 1) for line in lines if "=" in line and line.split("=", 1)[0].isalpha())
    assert report["rc"] == "1", done.stdout + done.stderr
    message = [line for line in lines if line.startswith("quipu:")]
    assert message and "no space left" in message[0] and "unexpected" not in done.stdout
    assert any(line.startswith("- free some space") for line in lines)
    assert report["commits"] == "2"  # the init commit and the first note: the failed add wrote nothing
    assert report["status"].strip() == "" and report["leftovers"].strip() == ""
    assert (report["again"], report["found"], report["fsck"]) == ("0", "2", "0")


def test_stdin_that_is_not_utf8_is_one_message_exit_1_and_nothing_added(tmp_path: Path) -> None:
    """Issue 12: invalid UTF-8 on `quipu add -` was an "unexpected error" with a crash log."""
    store = make_store(tmp_path / "store")
    head = store.head()
    done = subprocess.run([sys.executable, "-m", "quipu", "--store", str(store.root), "add", "-"],
                          input=b"caf\xe9 au lait", capture_output=True)
    assert done.returncode == 1
    err = done.stderr.decode()
    assert "not UTF-8" in err and "byte 3" in err and "unexpected" not in err
    assert err.splitlines()[-1].startswith("- ")
    assert store.head() == head
