from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from memorymd_test import article_index
from quipu.store.memory import render_memory
from testing.fixtures import REPO_ROOT, memory


def run_entry(script: str, function: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a console entry point as pre-commit would: the installed script, else the same function."""
    installed = Path(sys.executable).parent / script
    if installed.is_file():
        argv = [str(installed), *args]
    else:
        argv = [sys.executable, "-c", f"import sys; from quipu.claude.precommit import {function} as m; sys.exit(m())", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=60)


def validate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_entry("quipu-validate-frontmatter", "validate_frontmatter_main", *args, cwd=cwd)


def check_size(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_entry("quipu-check-memory-size", "check_memory_size_main", *args, cwd=cwd)


def put(root: Path, rel: str, data: bytes) -> str:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)
    return rel


def test_hook_definitions_point_at_declared_entry_points() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())}
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]

    assert set(hooks) == {"quipu-validate-frontmatter", "quipu-memory-md-size"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["entry"] in scripts
    files = re.compile(hooks["quipu-validate-frontmatter"]["files"])
    assert files.search("memories/ab/abc123.md") and not files.search("docs/memories/x.md")
    sizes = re.compile(hooks["quipu-memory-md-size"]["files"])
    for name in ("MEMORY.md", "CLAUDE.md", ".claude/CLAUDE.md", "a/b/MEMORY.md"):
        assert sizes.search(name), name
    for name in ("NOTMEMORY.md", "CLAUDE.md.bak", "CLAUDE.local.md"):
        assert not sizes.search(name), name


def test_valid_memories_pass_silently(tmp_path: Path) -> None:
    good = memory("abc123", "Deploys go through the release train", "Body.\n")
    hand = b'---\nid: fed987\ntitle: Hand written\nclass: rule\ncreated: 2026-11-29\ntopics: [deploy, "ci"]\n---\nBody\n'
    files = [put(tmp_path, good.path, render_memory(good)), put(tmp_path, "memories/fe/fed987.md", hand)]

    proc = validate(*files, cwd=tmp_path)

    assert (proc.returncode, proc.stdout) == (0, "")


def test_each_bad_memory_is_reported_as_path_and_problem(tmp_path: Path) -> None:
    good = render_memory(memory("abc123", "Fine"))
    files = {
        "memories/ab/abc123.md": good,
        "memories/zz/abc123.md": good,  # right content, wrong place
        "memories/ba/badcls.md": good.replace(b'"abc123"', b'"badcls"').replace(b'"project-note"', b'"opinion"'),
        "memories/an/anchor.md": b"---\nid: anchor\ntitle: &t x\nclass: rule\ncreated: 2026-11-29\naliases: [*t]\n---\n",
        "memories/la/latin1.md": b"---\nid: latin1\ntitle: caf\xe9\nclass: rule\ncreated: 2026-11-29\n---\n",
        "memories/no/nofm01.md": b"just text\n",
    }
    for rel, data in files.items():
        put(tmp_path, rel, data)

    proc = validate(*files, cwd=tmp_path)

    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    problems = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in lines if line.startswith("memories/")}
    assert "memories/ab/abc123.md" not in problems
    assert "belongs at memories/ab/abc123.md" in problems["memories/zz/abc123.md"]
    assert "'opinion'; allowed values: rule" in problems["memories/ba/badcls.md"]
    assert "anchors and aliases are not allowed" in problems["memories/an/anchor.md"]
    assert "not UTF-8" in problems["memories/la/latin1.md"]
    assert "no frontmatter" in problems["memories/no/nofm01.md"]


def test_memory_md_past_the_limit_fails_and_names_the_cut(tmp_path: Path) -> None:
    put(tmp_path, "memory/MEMORY.md", article_index().encode())
    put(tmp_path, "CLAUDE.md", b"# Project\n\n- run tests with pytest\n")

    proc = check_size("memory/MEMORY.md", "CLAUDE.md", cwd=tmp_path)

    assert proc.returncode == 1
    assert proc.stdout.startswith("memory/MEMORY.md: 229 lines, 31,283 bytes: over")
    assert "lines 177-229" in proc.stdout and "section ## Security rules (line 180)" in proc.stdout
    assert "CLAUDE.md:" not in proc.stdout


def test_size_limits_can_be_set_and_files_within_them_pass(tmp_path: Path) -> None:
    put(tmp_path, "CLAUDE.md", "".join(f"- rule {n}\n" for n in range(30)).encode())

    assert check_size("CLAUDE.md", cwd=tmp_path).returncode == 0
    tight = check_size("--max-lines", "20", "CLAUDE.md", cwd=tmp_path)
    assert tight.returncode == 1 and "over the 20-line" in tight.stdout and "lines 21-30" in tight.stdout
    missing = check_size("nope/MEMORY.md", cwd=tmp_path)
    assert missing.returncode == 1 and missing.stdout.startswith("nope/MEMORY.md: cannot read it")
