"""Faults a machine and other programs inflict: bad input, a full disk, a power cut, a corrupted
git index. Each ends in a one-line message or a store `quipu doctor` diagnoses and one command
repairs, with no committed memory lost."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testing.fixtures import REPO_ROOT, git, make_store, memory, quipu, read_only_mounts_work

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


def _store_with_notes(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = make_store(tmp_path / "store")
    for n in range(3):
        store.add(memory(f"note-{n}", f"Note {n} about the pipeline"))
    return store


def _doctor(store_root: Path, *more: str) -> tuple[int, dict[str, object]]:
    import json

    done = subprocess.run([sys.executable, "-m", "quipu", "--store", str(store_root), "doctor", "--json", *more],
                          capture_output=True, text=True, cwd=REPO_ROOT)
    return done.returncode, json.loads(done.stdout)["checks"][0]


def _all_found(store_root: Path) -> list[str]:
    import json

    done = subprocess.run([sys.executable, "-m", "quipu", "--store", str(store_root), "search", "--json", "pipeline"],
                          capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    return sorted(h["id"] for h in json.loads(done.stdout))


def _empty_object(store_root: Path, oid: str) -> None:
    loose = store_root / ".git" / "objects" / oid[:2] / oid[2:]
    loose.chmod(0o644)
    loose.write_bytes(b"")  # what a machine that lost power leaves of a file never flushed


@pytest.mark.parametrize("damage", ["zero-length ref", "truncated objects", "corrupt git index"])
def test_a_power_cut_or_another_tool_leaves_a_store_doctor_diagnoses_and_one_command_repairs(
        tmp_path: Path, damage: str) -> None:
    """Issue 12: crash safety beyond SIGKILL mid-commit."""
    store = _store_with_notes(tmp_path)
    root = store.root
    memories = ["note-0", "note-1", "note-2"]
    if damage == "zero-length ref":
        (root / ".git" / "refs" / "heads" / "main").write_bytes(b"")
    elif damage == "truncated objects":  # the newest commit's memory blob and root tree
        newest = git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD").strip()
        _empty_object(root, git(root, "rev-parse", f"HEAD:{newest}").strip())
        _empty_object(root, git(root, "rev-parse", "HEAD^{tree}").strip())
    else:
        (root / ".git" / "index").write_bytes(b"DIRC" + bytes(range(256)) * 4)

    code, check = _doctor(root)
    assert code == 1 and check["name"] == "git repository" and check["ok"] is False
    assert "--repair" in str(check["summary"])

    code, check = _doctor(root, "--repair")
    assert check["ok"] is True, check
    assert fsck_clean(root)
    assert git(root, "status", "--porcelain") == ""
    assert _all_found(root) == memories  # no committed memory lost
    store.add(memory("after-repair", "A note about the pipeline after the repair"))
    assert _all_found(root) == sorted([*memories, "after-repair"])
    assert any(p.is_file() for p in (root / ".git" / "quipu-damaged").rglob("*"))  # moved aside, not deleted


def fsck_clean(root: Path) -> bool:
    done = subprocess.run(["git", "-C", str(root), "fsck", "--no-dangling"], capture_output=True, text=True)
    return done.returncode == 0 and not done.stderr.strip()


# A store big enough that git's index (about 80 bytes an entry) outweighs everything a write puts on
# disk before it (the memory file, five small objects, the journal: about eight 4 KiB pages): with
# half the index's size left free, the write meets ENOSPC exactly while git's index is written.
_NOTES = 1000
_INDEX_DISK_FULL = r'''
set -u
D=$1; PY=$2; N=$5
mount -t tmpfs -o size=32m tmpfs "$D" || exit 97
cd "$3"
$PY -m quipu init "$D/store" >/dev/null 2>&1 || exit 98
mkdir "$D/notes"
i=0; while [ $i -lt $N ]; do echo "note $i about the pipeline" > "$D/notes/n$i.md"; i=$((i+1)); done
$PY -m quipu --store "$D/store" import markdown "$D/notes" >/dev/null 2>&1 || exit 99
rm -r "$D/notes"
$PY -m quipu --store "$D/store" add "the last note that fitted, about the pipeline" --title fitted >/dev/null || exit 96
echo "head=$(git -C "$D/store" rev-parse HEAD)"
echo "files=$(git -C "$D/store" ls-tree -r --name-only HEAD memories | wc -l)"
free=$(( $(stat -c %s "$D/store/.git/index") / 2048 / 4 * 4 + 24 ))
dd if=/dev/zero of="$D/reserve" bs=1k count=$free 2>/dev/null
dd if=/dev/zero of="$D/filler" bs=64k 2>/dev/null
rm "$D/reserve"
$PY -m quipu --store "$D/store" add "a note about the pipeline that meets a full disk" --title unlucky 2>"$4"
echo "rc=$?"
cat "$4"
echo "head_after=$(git -C "$D/store" rev-parse HEAD)"
cp "$D/store/.git/quipu-pending.json" "$D/../journal.json"
rm "$D/filler"
echo "files_after=$(git -C "$D/store" ls-tree -r --name-only HEAD memories | wc -l)"
echo "status=$(GIT_OPTIONAL_LOCKS=0 git -C "$D/store" status --porcelain | tr '\n' ' ')"
$PY -m quipu --store "$D/store" doctor --json > "$D/../doctor.json"; echo "doctor=$?"
$PY -m quipu --store "$D/store" doctor --repair --json > "$D/../repaired.json"; echo "repair=$?"
echo "journal_after=$(ls "$D/store/.git/quipu-pending.json" 2>/dev/null)"
echo "status_after=$(git -C "$D/store" status --porcelain | tr '\n' ' ')"
git -C "$D/store" fsck --no-dangling >/dev/null 2>&1; echo "fsck=$?"
$PY -m quipu --store "$D/store" add "a note about the pipeline that meets a full disk" --title unlucky >/dev/null; echo "again=$?"
echo "found=$($PY -m quipu --store "$D/store" search --json --limit 5 "meets full disk" | tr -d '\n ')"
echo "files_end=$(git -C "$D/store" ls-tree -r --name-only HEAD memories | wc -l)"
'''


@pytest.mark.skipif(not read_only_mounts_work(), reason="no unprivileged mount namespaces here")
def test_a_disk_that_fills_while_gits_index_is_written_loses_nothing_and_doctor_repairs_it(tmp_path: Path) -> None:
    """Issue 12: ENOSPC exactly while git's index is written (the other full-disk test fills the
    disk before the write begins). The write fails with one message and exit 1; the commit it made
    never reaches the branch; nothing committed is lost; `quipu doctor` names the unfinished write
    and `quipu doctor --repair` settles it."""
    import json

    folder = tmp_path / "small-disk"
    folder.mkdir()
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _INDEX_DISK_FULL, "sh",
                           str(folder), sys.executable, str(REPO_ROOT), str(tmp_path / "stderr"), str(_NOTES)],
                          capture_output=True, text=True, timeout=600)
    lines = done.stdout.splitlines()
    report = dict(line.split("=", 1) for line in lines if "=" in line and line.split("=", 1)[0].replace("_", "").isalpha())
    assert report.get("rc") == "1", done.stdout + done.stderr

    # The message: what happened and what to do, no crash report.
    message = [line for line in lines if line.startswith("quipu:")]
    assert len(message) == 1 and "no space left" in message[0] and "unexpected" not in done.stdout
    assert any(line.startswith("- free some space") for line in lines)

    # The fault struck while git's index was written: the write had made its commit object and
    # taken git's index lock, and never reached the branch swap.
    steps = [json.loads(line) for line in (tmp_path / "journal.json").read_text().splitlines() if line.strip()]
    own = [step for step in steps if step["commit"]]
    assert [step["step"] for step in own] == ["worktree", "index"], steps
    assert report["head_after"] == report["head"]  # nothing half-committed
    assert report["files_after"] == report["files"] == str(_NOTES + 1)  # nothing committed lost
    assert report["status"].strip() == ""

    doctor = json.loads((tmp_path / "doctor.json").read_text())["checks"][0]
    assert report["doctor"] == "1" and doctor["name"] == "git repository" and doctor["ok"] is False, doctor
    assert "--repair" in doctor["summary"] and any(d.startswith("write: a write did not finish") for d in doctor["details"])
    repaired = json.loads((tmp_path / "repaired.json").read_text())["checks"]
    assert report["repair"] == "0" and repaired[0]["ok"] is True, repaired
    assert any("settled" in d for d in repaired[0]["details"])
    assert report["journal_after"] == "" and report["status_after"].strip() == "" and report["fsck"] == "0"

    assert report["again"] == "0" and report["files_end"] == str(_NOTES + 2)
    assert [hit["title"] for hit in json.loads(report["found"])][:1] == ["unlucky"]


def test_a_write_killed_before_gits_index_caught_up_is_named_by_doctor_and_settled_by_repair(tmp_path: Path) -> None:
    """Issue 12: the journal a write leaves when it cannot finish is a finding, not "intact"."""
    import json

    store = _store_with_notes(tmp_path)
    root = store.root
    rel = "memories/no/note-0.md"
    git(root, "rm", "-q", "--cached", rel)  # git's index lost the entry, as when its write was cut short
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (root / ".git" / "quipu-pending.json").write_text(json.dumps(
        {"commit": "", "ref": "refs/heads/main", "paths": [rel], "pid": int(dead.stdout), "step": "index",
         "index_lock_at": None, "ref_lock_at": None}) + "\n")
    assert git(root, "status", "--porcelain") != ""

    code, check = _doctor(root)
    assert code == 1 and check["summary"] == "a write did not finish; run `quipu doctor --repair`"
    assert check["details"] == [f"write: a write did not finish (stopped at step 'index', its process is gone); "
                                f"the worktree and git's index may not match HEAD for {rel}"]

    _code, check = _doctor(root, "--repair")
    assert check["ok"] is True
    assert check["details"] == ["repaired: the unfinished write was settled: 1 path(s) brought in line with HEAD"]
    assert git(root, "status", "--porcelain") == "" and not (root / ".git" / "quipu-pending.json").exists()
    assert _all_found(root) == ["note-0", "note-1", "note-2"]


def test_a_write_in_progress_is_not_reported_as_unfinished(tmp_path: Path) -> None:
    import json
    import os

    store = _store_with_notes(tmp_path)
    (store.root / ".git" / "quipu-pending.json").write_text(json.dumps(
        {"commit": "", "ref": "refs/heads/main", "paths": [], "pid": os.getppid(), "step": "worktree"}) + "\n")
    _code, check = _doctor(store.root)
    assert check["ok"] is True and check["summary"] == "intact"


def test_a_journal_cut_short_before_its_first_line_is_named_and_cleared(tmp_path: Path) -> None:
    store = _store_with_notes(tmp_path)
    (store.root / ".git" / "quipu-pending.json").write_bytes(b'\n{"commit": "')
    _code, check = _doctor(store.root)
    assert check["details"] == ["write: a write did not finish (its journal cannot be read)"]
    _code, check = _doctor(store.root, "--repair")
    assert check["ok"] is True and not (store.root / ".git" / "quipu-pending.json").exists()


# ---------------------------------------------------------------- faults that took the crash path

_FULL_DISK_READS = r'''
set -u
D=$1; PY=$2; OUT=$4
mount -t tmpfs -o size=3m tmpfs "$D" || exit 97
export QUIPU_HOME="$D/home" CLAUDE_CONFIG_DIR="$D/claude"
cd "$3"
$PY -m quipu init "$D/store" >/dev/null 2>&1 || exit 98
for n in 1 2 3; do $PY -m quipu --store "$D/store" add "note $n about the pipeline" --title "note$n" >/dev/null || exit 99; done
mkdir -p "$D/claude/projects/p" && cp "$5" "$D/claude/projects/p/"
rm -f "$D/store/.cache/index.sqlite"*
dd if=/dev/zero of="$D/filler" bs=1k count=100000 2>/dev/null
for cmd in "index --rebuild" "search pipeline" "history index"; do
  $PY -m quipu --store "$D/store" $cmd >/dev/null 2>"$OUT/err"; echo "rc=$?"; cat "$OUT/err"
done
rm "$D/filler"
echo "commits=$(git -C "$D/store" rev-list --count HEAD)"
echo "found=$($PY -m quipu --store "$D/store" search pipeline | grep -c score)"
'''


@pytest.mark.skipif(not read_only_mounts_work(), reason="no mount namespaces here to mount a small tmpfs in")
def test_a_full_disk_under_the_index_or_the_history_archive_is_one_message_exit_1(tmp_path: Path) -> None:
    """SQLite's SQLITE_FULL ("database or disk is full") is a full disk, as ENOSPC is: the index
    rebuild, a search that must rebuild, and `history index` each say so in one line, exit 1."""
    from testing.transcripts import Transcript

    folder = tmp_path / "small-disk"
    folder.mkdir()
    t = Transcript("5d1c2a10-5b7e-4c21-9d0a-3e4f5a6b7c11", "/home/dev/shop")
    t.user("Why does the orders endpoint take four seconds?")
    t.assistant("There is no index on orders.created_at.")
    transcript = t.write(tmp_path / "projects")
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _FULL_DISK_READS, "sh",
                           str(folder), sys.executable, str(REPO_ROOT), str(tmp_path), str(transcript)],
                          capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()
    codes = [line for line in lines if line.startswith("rc=")]
    assert codes == ["rc=1"] * 3, done.stdout + done.stderr
    messages = [line for line in lines if line.startswith("quipu:")]
    assert len(messages) == 3 and all("no space left" in m for m in messages), done.stdout
    assert "unexpected" not in done.stdout and "Traceback" not in done.stdout
    assert sum(line.startswith("- free some space") for line in lines) == 3
    assert "commits=4" in lines and "found=3" in lines  # nothing committed was lost; space back, all found


@pytest.mark.skipif(not read_only_mounts_work(), reason="no mount namespaces here to mount a store read-only")
@pytest.mark.parametrize("command", [
    ["add", "a second note about pipelines", "--title", "second"],
    ["retract", "note-2"],
    ["fact", "set", "database", "postgres"],
    ["sweep", "--model", "none"],
    ["hooks", "install"],
    ["init", "{elsewhere}"],
])
def test_a_write_to_a_read_only_mount_is_one_message_exit_1_and_changes_nothing(tmp_path: Path, command: list[str]) -> None:
    """EROFS (even root cannot write a read-only mount) was "unexpected error: OSError", exit 3."""
    from testing.fixtures import quipu_read_only

    store = _store_with_notes(tmp_path)
    head = store.head()
    elsewhere = tmp_path / "elsewhere"  # a read-only folder beside the store (never inside it: init refuses that)
    elsewhere.mkdir()
    args = [part.replace("{elsewhere}", str(elsewhere / "inner")) for part in command]
    done = quipu_read_only([store.root, elsewhere], "--store", str(store.root), *args)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("quipu: error: cannot write ") and "Read-only file system" in lines[0], lines
    assert all(line.startswith("- ") for line in lines[1:]) and len(lines) >= 2
    assert "unexpected" not in done.stderr and "Traceback" not in done.stderr
    assert store.head() == head and git(store.root, "status", "--porcelain").strip() == ""


def test_an_argument_that_is_not_utf8_is_one_message_exit_1(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 on the command line (Python hands them over as lone surrogates)
    ended in two tracebacks and an empty crash.log."""
    import os

    store = _store_with_notes(tmp_path)
    head = store.head()
    for args in ([b"search", b"caf\xe9"], [b"add", b"a note \xff\xfe"], [b"show", b"note-\xc3"]):
        done = subprocess.run([sys.executable.encode(), b"-m", b"quipu", b"--store", os.fsencode(store.root), *args],
                              capture_output=True, cwd=REPO_ROOT)
        err = done.stderr.decode("utf-8", "replace")
        assert done.returncode == 1, err
        assert "Traceback" not in err and "unexpected" not in err
        lines = err.strip().splitlines()
        assert len(lines) == 2 and "is not valid UTF-8" in lines[0] and lines[1].startswith("- "), lines
    assert store.head() == head


def test_the_crash_path_prints_one_line_and_writes_the_log_whatever_the_arguments(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The handler of unexpected errors itself failed on an argument that is not UTF-8."""
    import os

    from quipu import cli

    monkeypatch.setattr(sys, "argv", ["quipu", "search", "caf\udce9"])
    try:
        raise ValueError("a failure no one planned for\nwith a second line")
    except ValueError as exc:
        assert cli._crashed(exc) == 3
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "quipu: unexpected error: ValueError: a failure no one planned for"
    assert len(err.splitlines()) == 2 and "Traceback" not in err
    log = Path(os.environ["QUIPU_HOME"]) / "logs" / "crash.log"
    text = log.read_text(encoding="utf-8")
    assert "caf\\udce9" in text and "Traceback" in text and "a failure no one planned for" in text


def test_one_transcript_line_nested_too_deep_is_skipped_and_the_others_archived(tmp_path: Path) -> None:
    """One 100,000-deep JSON line failed the whole `history index`: later transcripts were never archived."""
    import json

    from testing.transcripts import Transcript

    projects = tmp_path / "claude" / "projects"
    sessions = [f"5d1c2a10-5b7e-4c21-9d0a-3e4f5a6b7c2{n}" for n in range(3)]
    for n, sid in enumerate(sessions):
        t = Transcript(sid, f"/home/dev/p{n}")
        t.user(f"Question {n}: why is the zanzibar-{n} build slow?")
        if n == 1:
            t.raw(b"[" * 100_000 + b"]" * 100_000 + b"\n")
            t.raw(b'{"type": "user", "message": ' + b"[" * 100_000 + b"\n")
        t.assistant(f"Answer {n}: the cache of zanzibar-{n} was cold.")
        t.write(projects)
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    done = quipu("history", "index", "--json", env=env)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["sessions"] == 3 and summary["bad_lines"] == 2, summary
    for n in range(3):
        found = quipu("history", "search", "--json", f"zanzibar-{n}", env=env)
        assert found.returncode == 0, found.stderr
        assert any(f"zanzibar-{n}" in hit["text"] for hit in json.loads(found.stdout)["hits"])


_NUMBERS = [
    ["list", "--limit", "1e30"], ["list", "--limit", "1" + "0" * 30], ["list", "--limit", "-1"],
    ["log", "--limit", "1" + "0" * 30], ["search", "--limit", "1" + "0" * 30, "pipeline"],
    ["search", "--limit", "nan", "pipeline"], ["recall", "--limit", "1" + "0" * 30, "pipeline"],
    ["history", "search", "--limit", "1" + "0" * 30, "x"], ["history", "show", "--context", "1" + "0" * 30, "s:1"],
    ["add", "--half-life", "1e400", "a note that decays"], ["add", "--half-life", "nan", "a note that decays"],
    ["add", "--half-life", "-3", "a note that decays"], ["verify", "--jobs", "0", "--all"],
    ["verify", "--timeout", "inf", "--all"], ["sweep", "--max-calls", "-1"], ["capture", "--max-chars", "1e30"],
    ["skills", "candidates", "--min-sessions", "0"], ["profile", "add", "--stable-months", "1" + "0" * 30, "Editor: vim"],
]


@pytest.mark.parametrize("args", _NUMBERS, ids=[" ".join(a)[:40] for a in _NUMBERS])
def test_a_number_out_of_range_is_a_usage_error_naming_the_range(tmp_path: Path, args: list[str]) -> None:
    """`quipu list --limit 1e30` gave IntegrityError: every number the CLI takes is checked."""
    store = _store_with_notes(tmp_path)
    done = quipu("--store", str(store.root), *args)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "error: argument" in last and (" from " in last or " above " in last), last
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr


@pytest.mark.parametrize("since", ["1e30d", "99999999999y", "9" * 40 + "d", "9999-12-31T23:00-05:00"])
def test_an_age_or_date_out_of_range_is_one_message_exit_2(tmp_path: Path, since: str) -> None:
    """`quipu history search --since 1e30d` gave OverflowError (the form it took then); a date
    quipu cannot use is a usage error, as a number out of range is."""
    for args in (["history", "search", "--since", since, "x"], ["history", "forget", "--before", since, "--dry-run"]):
        done = quipu(*args)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert lines[0].startswith("quipu: error: ") and lines[-1].startswith("- ") and len(lines) == 2, lines


def test_every_number_the_cli_takes_has_a_checked_range() -> None:
    """No option parses a bare int or float: each uses a type from quipu.commands._common that names its range."""
    import argparse

    from quipu import cli

    def actions(parser: argparse.ArgumentParser):  # type: ignore[no-untyped-def]
        for action in parser._actions:
            yield action
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from actions(sub)

    bare = [a.option_strings or a.dest for a in actions(cli.build_parser()) if a.type in (int, float)]
    assert bare == []


@pytest.mark.parametrize("garbage", [b"", b"\x00" * 300, b"DIRC" + bytes(range(256)) * 4, bytes(range(200, 256)) * 6,
                                     None, "a folder"])
def test_a_write_into_a_store_whose_git_index_is_damaged_is_one_message_naming_the_repair(
        tmp_path: Path, garbage: bytes | str | None) -> None:
    """A damaged ``.git/index`` (git's cache of the worktree) stops a write with exit 1 and the
    command that repairs it, never an unexpected error; nothing is half written."""
    store = _store_with_notes(tmp_path)
    root = store.root
    head = git(root, "rev-parse", "HEAD").strip()
    index = root / ".git" / "index"
    if isinstance(garbage, bytes):
        index.write_bytes(garbage)
    else:  # deleted, or a folder in its place
        index.unlink()
        if garbage:
            index.mkdir()

    labelled = quipu("--store", str(root), "label", "note-1", "unverified")
    added = quipu("--store", str(root), "add", "The pipeline runs nightly at 02:00", "--title", "nightly")

    for result in (labelled, added):
        assert result.returncode == 1, result.stderr
        assert "quipu doctor --repair" in result.stderr and "nothing was written" in result.stderr
        assert "unexpected error" not in result.stderr
    assert git(root, "rev-parse", "HEAD").strip() == head
    code, check = _doctor(root, "--repair")
    assert check["ok"] is True, check
    assert quipu("--store", str(root), "label", "note-1", "unverified").returncode == 0
