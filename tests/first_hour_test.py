"""A new user's first hour: every dead end says the way forward, and that way works when followed.

Each test runs the real `quipu` as a process, the way the person in the terminal would, and then
follows what the message says.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


from quipu.capture import gates
from quipu.history import promote as history_promote
from quipu.probes.extract import extract
from quipu.store.store import Store
from testing.fixtures import git, quipu

PYTHON_BIN = str(Path(sys.executable).parent)


def fix_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line[2:] for line in result.stderr.splitlines() if line.startswith("- ")]


def backticked(line: str) -> str:
    return line.split("`")[1]


def test_a_folder_of_notes_given_as_the_store_leads_to_a_store_that_works(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.md").write_text("buy milk\n")

    refused = quipu("list", "--store", str(notes))  # the global flag after the command is accepted
    assert refused.returncode == 1 and "not a git repository" in refused.stderr
    command = backticked(fix_lines(refused)[0])
    assert command.startswith("quipu init ")

    made = quipu(*command.split()[1:])
    assert made.returncode == 0, made.stderr
    store = command.split()[2]
    assert quipu("list", "--store", store).returncode == 0
    assert (notes / "todo.md").read_text() == "buy milk\n"  # the notes are left as they were
    again = quipu("init", str(notes))  # init itself names the same way forward
    assert again.returncode == 1 and f"quipu init {store}" in again.stderr


def test_a_git_repository_that_is_not_a_store_gets_a_fix_init_accepts(tmp_path: Path) -> None:
    repo = tmp_path / "code"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "main.py").write_text("print(1)\n")
    refused = quipu("--store", str(repo), "list")
    command = backticked(fix_lines(refused)[0])
    assert quipu(*command.split()[1:]).returncode == 0


def test_global_flags_are_accepted_after_nested_commands_too(tmp_path: Path) -> None:
    store = tmp_path / "s"
    assert quipu("init", str(store)).returncode == 0
    assert quipu("history", "search", "anything", "--store", str(store)).returncode in (0, 1)
    listed = quipu("list", "--json", "--store", str(store))
    assert listed.returncode == 0 and json.loads(listed.stdout) == []


def test_init_without_a_git_identity_says_who_commits_and_how_to_change_it(tmp_path: Path) -> None:
    empty = tmp_path / "gitconfig"
    empty.write_text("")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))}
    env["GIT_CONFIG_GLOBAL"] = str(empty)
    env["HOME"] = str(tmp_path / "bare-home")  # no ~/.gitconfig either
    env["XDG_CONFIG_HOME"] = str(tmp_path / "bare-home" / ".config")
    result = subprocess.run([sys.executable, "-m", "quipu", "init", str(tmp_path / "s")], capture_output=True,
                            text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert "quipu <quipu@localhost>" in result.stdout and "git config --global user.email" in result.stdout
    with_identity = quipu("init", str(tmp_path / "t"))
    assert "quipu@localhost" not in with_identity.stdout


def test_a_near_identical_memory_is_refused_unless_forced(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    quipu("init", store)
    first = quipu("--store", store, "add", "Deploys go through CI; run scripts/deploy.sh --dry-run first",
                  "--title", "How we deploy")
    assert first.returncode == 0
    again = quipu("--store", store, "add", "Deploys go through CI, run scripts/deploy.sh --dry-run first.",
                  "--title", "how we deploy")
    assert again.returncode == 1 and "near-identical" in again.stderr
    assert any("--force" in line for line in fix_lines(again))
    other = quipu("--store", store, "add", "Deploys go through CI; run scripts/deploy.sh --canary first",
                  "--title", "Canary deploys")
    assert other.returncode == 0, other.stderr  # another claim on the same subject is not a duplicate
    forced = quipu("--store", store, "add", "Deploys go through CI, run scripts/deploy.sh --dry-run first.",
                   "--title", "how we deploy", "--force")
    assert forced.returncode == 0
    assert len(json.loads(quipu("--store", store, "list", "--json").stdout)) == 3


def test_the_mcp_remember_tool_refuses_a_near_identical_memory(tmp_path: Path) -> None:
    from quipu.mcp.tools import Service, remember

    store, _ = Store.init(tmp_path / "s")
    service = Service(explicit_store=str(store.root), session="mcp-test")
    body = "The billing service stores amounts as integer cents."
    first = remember(service, {"title": "Billing amounts", "body": body, "class": "project-note"})
    second = remember(service, {"title": "Billing amounts in cents", "body": body.lower(), "class": "project-note"})
    assert "Remembered" in first.text
    assert second.is_error and "near-identical" in second.text


def test_a_claim_that_a_path_was_removed_is_verified_by_its_absence(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "settings.py").write_text("")
    store = str(tmp_path / "s")
    quipu("init", store)
    quipu("--store", store, "add", "The old `src/settings_old.py` was removed; settings live in `src/settings.py`.",
          "--title", "Settings module", "--id", "settings-note")
    quipu("--store", store, "add", "The scratch file `src/scratch.py` was deleted.", "--title", "Scratch file",
          "--id", "scratch-note")
    (project / "src" / "scratch.py").write_text("")  # it came back: the claim is refuted

    result = quipu("--store", store, "verify", "--all", "--root", f"project={project}", "--json")
    assert result.returncode in (0, 1), result.stderr
    labelled = {m["id"]: m.get("labels", []) for m in json.loads(quipu("--store", store, "list", "--json").stdout)}
    assert "unverified" not in json.dumps(labelled["settings-note"])
    assert "unverified" in json.dumps(labelled["scratch-note"])
    assert [item["args"].get("expect") for item in extract("We renamed `src/a.py` to `src/b.py`.", root="p")] \
        == ["absent", None]


def test_explain_counts_what_it_left_out_beyond_the_first_few(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    quipu("init", store)
    for n in range(14):
        quipu("--store", store, "add", f"Kubernetes pod {n} restarts when memory runs out, say the notes {n}.",
              "--title", f"Kubernetes note {n}", "--force")
    out = quipu("--store", store, "recall", "why does the kubernetes pod restart", "--explain").stdout
    left = [line for line in out.splitlines() if line.startswith("Left out")]
    assert 1 < len(left) <= 6, out
    assert "more:" in left[-1] and "--json" in left[-1]


def test_a_question_is_never_promoted_and_the_message_names_what_to_do() -> None:
    asked = gates.Candidate(cls="project-note", title="How do we deploy shop-api",
                            statement="How do we deploy shop-api to production?", outcome="held", kind="durable")
    refusal = gates.check(asked)
    assert refusal is not None and refusal.gate == "question"
    told = gates.Candidate(cls="project-note", title="Deploys", statement="When the cache is cold the first request "
                           "takes two seconds", outcome="held", kind="durable")
    assert gates.check(told) is None
    assert history_promote.default_title("How do we deploy?")  # the module the command uses is importable


# --- doctor: the wiring into Claude Code actually runs ------------------------------------------

def doctor(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`quipu doctor` with quipu on PATH and a model that needs no login (the capture check is apart)."""
    return quipu("doctor", env={"PATH": PYTHON_BIN + os.pathsep + "/usr/bin:/bin", "QUIPU_MODEL": "scripted",
                                **(env or {})}, cwd=cwd)


def test_doctor_fails_naming_the_fix_when_the_hook_interpreter_is_gone(quipu_env: Path, tmp_path: Path) -> None:
    quipu("init")
    assert quipu("install", "claude", "--user", "--no-mcp").returncode == 0
    ok = doctor(tmp_path)
    assert ok.returncode == 0 and "UserPromptSubmit hook in" in ok.stdout, ok.stdout
    path = quipu_env / ".claude" / "settings.json"
    moved = path.read_text().replace(os.path.abspath(sys.executable), str(tmp_path / "old-clone/.venv/bin/python"))
    path.write_text(moved)

    result = doctor(tmp_path)
    assert result.returncode == 1
    assert "[!!] Claude Code" in result.stdout and "does not start" in result.stdout
    assert "quipu install claude --user" in result.stdout


def test_doctor_fails_when_the_mcp_command_fails_and_when_the_server_is_disabled(quipu_env: Path,
                                                                                 tmp_path: Path) -> None:
    quipu("init")
    project = tmp_path / "proj"
    project.mkdir()
    git(project, "init", "-q")
    assert quipu("install", "claude", "--project", cwd=project).returncode == 0
    local = project / ".claude" / "settings.local.json"

    pending = doctor(project)
    assert pending.returncode == 1 and "not approved yet" in pending.stdout and "enabledMcpjsonServers" in pending.stdout
    local.write_text(json.dumps({"enabledMcpjsonServers": ["quipu"]}))
    approved = doctor(project)
    assert approved.returncode == 0, approved.stdout
    assert "MCP server in" in approved.stdout and "starts" in approved.stdout

    local.write_text(json.dumps({"disabledMcpjsonServers": ["quipu"]}))
    disabled = doctor(project)
    assert disabled.returncode == 1 and "disabled in Claude Code" in disabled.stdout and str(local) in disabled.stdout

    local.write_text(json.dumps({"enabledMcpjsonServers": ["quipu"]}))
    no_quipu = doctor(project, env={"PATH": "/usr/bin:/bin"})  # a teammate without quipu on PATH
    assert no_quipu.returncode == 1
    assert "MCP server in" in no_quipu.stdout and "does not start" in no_quipu.stdout
    assert "pipx install ./quipu" in no_quipu.stdout and "PyPI project named quipu is another one" in no_quipu.stdout


def fake_claude(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "claude"
    exe.write_text("#!/bin/sh\necho 'Invalid API key \u00b7 Please run /login' >&2\nexit 1\n")
    exe.chmod(0o755)
    return folder


def test_without_a_login_doctor_and_the_session_end_log_say_capture_cannot_run_and_why(
    quipu_env: Path, tmp_path: Path,
) -> None:
    quipu("init")
    bin_dir = fake_claude(tmp_path / "bin")
    path = os.pathsep.join([PYTHON_BIN, str(bin_dir), "/usr/bin:/bin"])
    env = {"PATH": path, "ANTHROPIC_API_KEY": "sk-ant-api03-not-a-real-key"}
    before = quipu("doctor", env=env, cwd=tmp_path)
    assert "[ok] capture" in before.stdout and "not logged in" in before.stdout  # not hooked yet: only said
    quipu("install", "claude", "--user", "--no-mcp")

    result = quipu("doctor", env=env, cwd=tmp_path)
    assert result.returncode == 1
    line = next(line for line in result.stdout.splitlines() if line.startswith("[!!] capture"))
    assert "not logged in" in line and "ANTHROPIC_API_KEY is set" in line
    assert "use_api_key = true" in result.stdout

    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "We use Alembic."}}) + "\n")
    quipu("session-end", "--worker", "--session", "s1", "--transcript", str(transcript), "--cwd", str(tmp_path),
          env=env)
    log = (quipu_env / ".quipu-home" / "logs" / "session-hook.log").read_text()
    assert "capture CANNOT run" in log and "not logged in" in log

    (quipu_env / ".quipu-home" / "config.toml").write_text("[sweep]\nuse_api_key = true\n")
    opted = quipu("doctor", env=env, cwd=tmp_path)
    assert "[ok] capture" in opted.stdout and "ANTHROPIC_API_KEY" in opted.stdout
    (bin_dir / "claude").unlink()
    missing = quipu("doctor", env=env, cwd=tmp_path)
    assert "[!!] capture" in missing.stdout and "not on PATH" in missing.stdout


def test_a_store_may_not_opt_in_to_the_api_key(tmp_path: Path) -> None:
    store = tmp_path / "s"
    quipu("init", str(store))
    (store / "quipu.toml").write_text((store / "quipu.toml").read_text() + "\n[sweep]\nuse_api_key = true\n")
    result = quipu("--store", str(store), "doctor")
    assert "use_api_key in" in result.stdout and "is ignored" in result.stdout


def test_project_files_hold_no_path_of_this_machine_and_the_prompt_hook_fails_open(quipu_env: Path,
                                                                                    tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    git(project, "init", "-q")
    assert quipu("install", "claude", "--project", cwd=project).returncode == 0
    from quipu.store import assets

    texts = [(project / name).read_text() for name in (".claude/settings.json", ".mcp.json")]
    for machine in (str(tmp_path), str(quipu_env), sys.prefix, os.path.realpath(sys.executable),
                    str(assets.hooks_dir()), str(Path(__file__).resolve().parent.parent)):
        assert all(machine not in text for text in texts), machine
    prompt = json.loads(texts[0])["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "x", "session_id": "s", "cwd": str(project)})
    nothing = subprocess.run(["sh", "-c", prompt], input=event, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "nobody")})
    assert (nothing.returncode, nothing.stdout, nothing.stderr) == (0, "", "")  # no quipu at all: silent
