from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from quipu.claude import memorymd
from testing.fixtures import git, make_store, quipu

SECTIONS = {1: "# Memory index", 2: "## Project notes", 60: "## Feedback", 120: "## References", 180: "## Security rules"}


def article_index(lines: int = 229, size: int = 31_283, loaded: int = 176) -> str:
    """A MEMORY.md shaped like the article's: 229 lines, 31,283 bytes, of which the first 176 load.

    Entry lines are padded so that the first ``loaded`` lines take exactly 25,000 bytes (newlines
    included) and the whole file ``size`` bytes; line ``loaded + 1`` is the first one cut.
    """
    texts = []
    for n in range(1, lines + 1):
        if n in SECTIONS:
            texts.append(SECTIONS[n])
        else:
            texts.append(f"- [Entry {n}](entry_{n}.md) — what entry {n} says about the deploy pipeline")

    def pad(last: int, first: int, target: int) -> None:
        need = target - sum(len(t.encode()) + 1 for t in texts[first - 1 : last])
        assert need >= 0
        texts[last - 1] += " " + "x" * (need - 1) if need else ""

    pad(loaded, 1, memorymd.MAX_BYTES)
    pad(lines, loaded + 1, size - memorymd.MAX_BYTES)
    return "\n".join(texts) + "\n"


def test_article_sized_index_loses_its_last_53_lines_and_security_section(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(article_index(), encoding="utf-8")
    assert len(path.read_text().splitlines()) == 229 and path.stat().st_size == 31_283

    result = memorymd.measure_file(path)

    assert (result.lines, result.bytes) == (229, 31_283)
    assert result.over and result.cut_by == "bytes"
    assert result.loaded_lines == 176 and result.loaded_bytes == 25_000
    assert [line.number for line in result.cut] == list(range(177, 230))
    assert [(s.heading, s.line, s.lines_cut, s.whole) for s in result.sections] == [
        ("## References", 120, 3, False),
        ("## Security rules", 180, 50, True),
    ]
    assert "lines 177-229 (53 lines, 6,283 bytes, 23%) never load" in result.summary()


def test_a_line_loads_when_its_newline_is_at_byte_25000_or_before() -> None:
    at_limit = memorymd.measure("a" * 25_000 + "\n" + "b\n")  # newline at index 25,000
    assert at_limit.loaded_lines == 1 and [x.number for x in at_limit.cut] == [2]
    past = memorymd.measure("a" * 25_001 + "\nb\n")
    assert past.loaded_lines == 0 and past.cut_by == "bytes"
    assert not memorymd.measure("a" * 24_999 + "\n").over


def test_many_short_lines_are_cut_by_the_line_limit() -> None:
    text = "".join(f"- note {n}\n" for n in range(1, 251))
    result = memorymd.measure(text)
    assert result.cut_by == "lines" and result.loaded_lines == 200
    assert result.cut[0].number == 201 and result.cut[0].section == memorymd.BEFORE_FIRST_HEADING
    assert not memorymd.measure("".join(f"- note {n}\n" for n in range(200))).over


def test_frontmatter_and_block_comments_are_not_measured_but_line_numbers_stay_the_files() -> None:
    head = "---\nname: index\ndescription: all of it\n---\n<!--\nhousekeeping notes\nthat span\nlines -->\n"
    body = "".join(f"- entry {n}\n" for n in range(1, 202))
    result = memorymd.measure(head + body)
    assert result.stripped_lines == 8 and result.lines == 201
    assert [line.number for line in result.cut] == [8 + 201]


def test_headings_and_comments_inside_code_fences_are_plain_lines() -> None:
    text = "## Real\n```\n# not a heading\n<!-- not a comment -->\n```\n" + "- x\n" * 200
    result = memorymd.measure(text)
    assert result.stripped_lines == 0
    assert {s.heading for s in result.sections} == {"## Real"}


def test_auto_memory_index_is_shared_by_subfolders_and_worktrees(tmp_path: Path, quipu_env: Path) -> None:
    repo = tmp_path / "my repo.v2"
    (repo / "sub").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    real = str(repo.resolve())
    expected = quipu_env / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", real) / "memory" / "MEMORY.md"

    assert memorymd.auto_memory_index(repo / "sub") == expected
    assert memorymd.auto_memory_index(tmp_path / "wt") == expected
    assert "-my-repo-v2" in str(expected)
    outside = tmp_path / "plain"
    outside.mkdir()
    assert memorymd.auto_memory_index(outside).parent.parent.name == re.sub(r"[^A-Za-z0-9]", "-", str(outside))


def test_doctor_names_the_lines_and_sections_past_the_cut(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    index_file = tmp_path / "MEMORY.md"
    index_file.write_text(article_index(), encoding="utf-8")

    proc = quipu("--store", str(store.root), "doctor", "--memory-md", str(index_file))

    assert proc.returncode == 1
    assert "lines 177-229 (53 lines" in proc.stdout
    assert "section ## Security rules (line 180): all 50 lines past the cut" in proc.stdout
    assert f"quipu import memory-md {index_file}" in proc.stdout


def test_doctor_finds_this_projects_auto_memory_index(tmp_path: Path, quipu_env: Path) -> None:
    store = make_store(tmp_path / "store")
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    target = memorymd.auto_memory_index(project)
    target.parent.mkdir(parents=True)

    clean = quipu("--store", str(store.root), "doctor", "--json", cwd=project)
    check = next(c for c in json.loads(clean.stdout)["checks"] if c["name"] == "MEMORY.md")
    assert check["ok"] and "no auto-memory index" in check["summary"]

    target.write_text(article_index(), encoding="utf-8")
    found = quipu("--store", str(store.root), "doctor", "--json", cwd=project)
    check = next(c for c in json.loads(found.stdout)["checks"] if c["name"] == "MEMORY.md")
    assert not check["ok"] and str(target) in check["summary"]
    assert any(d.startswith("line 177: ") for d in check["details"])


def auto_memory_dir(root: Path) -> Path:
    """A Claude Code auto-memory folder: typed topic files, an index whose last section falls past the cut."""
    root.mkdir(parents=True)
    topics = {
        "user_role.md": "---\nname: user_role\ndescription: who the user is\ntype: user\n---\nSenior data engineer; wants terse answers.\n",
        "feedback_db.md": "---\nname: feedback_db\ntype: feedback\nmodified: 2026-03-02\n---\nIntegration tests hit a real database, never a mock.\n",
        "project_freeze.md": "---\ntype: project\n---\nNo deploys on Fridays until the ledger migration lands.\n",
        "reference_dash.md": "---\ntype: reference\n---\nLatency dashboard: grafana board 'edge-p99'.\n",
        "security_secrets.md": "---\nname: secrets\ntype: feedback\n---\nNever paste production secrets into chat; fetch them with doppler run.\n",
    }
    for name, text in topics.items():
        (root / name).write_text(text, encoding="utf-8")
    (root.parent / "outside.md").write_text("---\ntype: feedback\n---\nprivate\n", encoding="utf-8")
    lines = [
        "# Memory index",
        "## User",
        "- [User role](user_role.md) — senior data engineer",
        "- Prefers metric units in every report",
        "## Feedback",
        "- [Database tests](feedback_db.md) — real database in integration tests",
        "  - learned after the March outage",
        "- [Escape](../outside.md) — a link out of the folder is not followed",
        "## Project",
        "- [Deploy freeze](project_freeze.md): Fridays",
        "- [Latency dashboard](reference_dash.md) — where p99 lives",
        "",
        "Stray paragraph that is not an entry.",
        "## Notes",
    ]
    lines += [f"- weather station {n} calibration note: " + "drift measured weekly " * 18 for n in range(60)]
    lines += ["## Security rules", "- [Production secrets](security_secrets.md) — never in chat", "- Rotate the deploy key every quarter"]
    (root / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "MEMORY.md"


def test_import_turns_every_entry_into_a_memory_including_those_past_the_cut(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    index_file = auto_memory_dir(tmp_path / "claude" / "memory")
    before = int(git(store.root, "rev-list", "--count", "HEAD"))

    proc = quipu("--store", str(store.root), "import", "memory-md", str(index_file), "--json")

    assert proc.returncode == 4, proc.stderr  # the entry whose link leaves the folder is skipped
    report = json.loads(proc.stdout)
    entries = {e["title"]: e for e in report["entries"]}
    assert len(entries) == 5 + 60 + 2 and {e["status"] for e in entries.values()} == {"imported"}
    assert int(git(store.root, "rev-list", "--count", "HEAD")) == before + 67  # one commit per memory
    assert [x["line"] for x in report["not_imported"]] == [13]
    classes = {t: entries[t]["class"] for t in ("User role", "Database tests", "Deploy freeze", "Latency dashboard", "Production secrets")}
    assert classes == {"User role": "preference", "Database tests": "rule", "Deploy freeze": "project-note", "Latency dashboard": "reference", "Production secrets": "rule"}
    assert entries["Production secrets"]["past_cut"] and entries["Rotate the deploy key every quarter"]["past_cut"]
    assert not entries["User role"]["past_cut"]
    assert [(s["path"], s["reason"].split(" (")[0]) for s in report["skipped"]] == [
        (f"{index_file}:8", "its link ../outside.md leaves the folder of the MEMORY.md")]

    secrets = store.get(entries["Production secrets"]["id"])
    assert secrets.body == "Never paste production secrets into chat; fetch them with doppler run.\n"
    assert (secrets.origin, secrets.topics, secrets.description) == ("import", ("Security rules",), "never in chat")
    db = store.get(entries["Database tests"]["id"])
    assert db.created == "2026-03-02" and db.body.endswith("- learned after the March outage\n")
    assert not any("private" in store.get(e["id"]).body for e in entries.values())
    found = quipu("--store", str(store.root), "search", "paste production secrets", "--json")
    assert entries["Production secrets"]["id"] in [hit["id"] for hit in json.loads(found.stdout)]


def test_importing_the_same_index_again_adds_nothing(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    index_file = auto_memory_dir(tmp_path / "claude" / "memory")
    assert quipu("--store", str(store.root), "import", "memory-md", str(index_file)).returncode == 4
    head = git(store.root, "rev-parse", "HEAD")

    again = quipu("--store", str(store.root), "import", "memory-md", str(index_file), "--json")

    assert {e["status"] for e in json.loads(again.stdout)["entries"]} == {"exists"}
    assert git(store.root, "rev-parse", "HEAD") == head
    (index_file.parent / "project_freeze.md").write_text("---\ntype: project\n---\nThe freeze ended in May.\n")
    changed = json.loads(quipu("--store", str(store.root), "import", "memory-md", str(index_file), "--json").stdout)
    assert [e["title"] for e in changed["entries"] if e["status"] == "imported"] == ["Deploy freeze"]


def test_dry_run_import_commits_nothing(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    index_file = auto_memory_dir(tmp_path / "claude" / "memory")
    head = git(store.root, "rev-parse", "HEAD")

    proc = quipu("--store", str(store.root), "import", "memory-md", str(index_file), "--dry-run")

    assert proc.returncode == 4 and "Would import 67 of 68 entries" in proc.stdout
    first_cut = memorymd.measure(index_file.read_text()).cut[0].number
    past = sum(1 for line in index_file.read_text().splitlines()[first_cut - 1 :] if line.startswith("- "))
    assert past >= 2 and f"{past} of them were past Claude Code's load cut" in proc.stdout
    assert git(store.root, "rev-parse", "HEAD") == head


def test_carriage_returns_and_undecodable_bytes_count_as_the_bytes_they_are(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_bytes(b"- caf\xe9 \xff\r\n" * 3000)  # 10 bytes a line on disk, not valid UTF-8

    result = memorymd.measure_file(path)

    assert result.bytes == 30_000 and result.cut_by == "lines" and result.loaded_bytes == 2_000
    assert result.cut[0].text == "- caf\ufffd \ufffd"
    assert memorymd.measure_file(path, max_lines=5000).loaded_lines == 2_500


def test_auto_memory_index_follows_the_auto_memory_directory_setting(tmp_path: Path, quipu_env: Path) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"autoMemoryDirectory": "~/notes/claude-memory"}')
    assert memorymd.auto_memory_index(project) == quipu_env / "notes" / "claude-memory" / "MEMORY.md"


def test_importing_this_projects_auto_memory_records_its_project_notes_as_of_the_project(
        tmp_path: Path, quipu_env: Path) -> None:
    """Claude Code keeps one auto-memory a project: imported from inside that project, its project
    notes are the project's (the prompt hook then counts a file they name there), while its user
    preferences and feedback stay of no project; any other index, or --project, decides as given."""
    store = make_store(tmp_path / "store")
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    target = memorymd.auto_memory_index(project)
    auto_memory_dir(target.parent)

    proc = quipu("--store", str(store.root), "import", "memory-md", str(target), "--json", cwd=project / "pkg")
    assert proc.returncode == 4, proc.stderr  # one entry links outside the folder
    report = json.loads(proc.stdout)
    assert report["project_notes_of"] == str(project)
    projects = {e["title"]: store.get(e["id"]).project for e in report["entries"]}
    assert projects["Deploy freeze"] == str(project)
    assert projects["User role"] is None and projects["Database tests"] is None

    elsewhere = make_store(tmp_path / "other-store")
    other = json.loads(quipu("--store", str(elsewhere.root), "import", "memory-md", str(target), "--json",
                             cwd=tmp_path).stdout)
    assert other["project_notes_of"] is None
    assert {elsewhere.get(e["id"]).project for e in other["entries"]} == {None}
