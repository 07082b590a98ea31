"""How the `quipu` program ends (quipu.cli.run): at once when nothing waits for the interpreter's
teardown, with its output flushed and its exit status kept; through the normal exit when an
``atexit`` callback or a live thread waits."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# A real `quipu` process: whatever the test sets up first, then the program's own entry.
PROGRAM = """
import atexit, sys, threading, time
from pathlib import Path
marks = Path(sys.argv[1])
class Teardown:
    def __del__(self):
        (marks / "teardown").write_text("ran")
kept = Teardown()  # deleted only by the interpreter's teardown
if sys.argv[2] == "atexit":
    atexit.register(lambda: (marks / "atexit").write_text("ran"))
if sys.argv[2] == "thread":
    def work():  # alive until the main thread is done, however long the program takes
        while threading.main_thread().is_alive():
            time.sleep(0.01)
        (marks / "thread").write_text("ran")
    threading.Thread(target=work).start()
sys.argv = ["quipu", *sys.argv[3:]]
from quipu.cli import run
run()
"""


def _program(marks: Path, waits: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROGRAM, str(marks), waits, *argv],
                          capture_output=True, text=True, timeout=60)


def test_with_nothing_waiting_the_program_ends_at_once_with_its_output_and_status(tmp_path: Path) -> None:
    done = _program(tmp_path, "none")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: quipu") and "Exit codes:" in done.stdout  # flushed whole into a pipe
    assert not (tmp_path / "teardown").exists()  # no teardown ran
    failed = _program(tmp_path, "none", "--store", str(tmp_path / "nowhere"), "list")
    assert failed.returncode == 1
    assert failed.stderr.startswith("quipu: error: no memory store at")


@pytest.mark.parametrize("waits", ["atexit", "thread"])
def test_what_waits_for_the_exit_still_runs(tmp_path: Path, waits: str) -> None:
    done = _program(tmp_path, waits)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / waits).read_text() == "ran"
    assert (tmp_path / "teardown").read_text() == "ran"  # the interpreter's own exit
    assert "Exit codes:" in done.stdout
