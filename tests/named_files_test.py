"""A memory of a project that names a file the prompt names ("@TODO.md") is recalled in that project,
and a memory of another project speaks only on strong evidence.

Real hook processes, real stores in real folders; the realistic test reads the shared data and is
skipped with a message when it is absent.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from quipu.index import index
from quipu.prompt import indexread, locate, recall
from quipu.prompt.files import of_this_project
from quipu.prompt.files import named_files
from quipu.store.store import Store
from testing import realistic as R
from testing.fixtures import add_all, git, make_store, memory, quipu, run_prompt_hook

DATA = R.data_dir()
PAIRS = Path(__file__).parent.parent / "bench" / "data"
# A long request about other work that mentions the file in passing: its words alone carry no evidence
# for the memory about the file ("adjust", "parser", "refactor" are not in it).
REQUEST = "Adjust @{file} first, then carry on with the parser refactor we planned yesterday and run the suite"


def test_the_files_a_prompt_names_are_read_by_name_and_extension() -> None:
    prompt = ("Read @TODO.md, run ./cleanup.py and src/pkg/core_engine.py; see https://example.com/docs/a.md, "
              "e.g. section 2.1. then @PROGRESS.md again and TODO.md")
    assert named_files(prompt) == ["todo.md", "cleanup.py", "core_engine.py", "progress.md"]
    assert named_files("continue") == [] and named_files("bump it to 1.4.0.") == []


def test_a_memory_is_of_the_project_its_folder_or_its_name_says() -> None:
    assert of_this_project("/home/ann/src/app", "/home/ann/src/app/pkg")
    assert of_this_project("/home/ann/src/app", "/home/ann/src/app")
    assert not of_this_project("/home/ann/src/app", "/home/ann/src/app2")  # a sibling sharing the start
    assert not of_this_project("/home/ann/src/app", "/home/ann/src")
    # a store synced between machines: the same place below another home folder
    assert of_this_project("/home/ann/src/app", "/Users/ann/src/app/pkg")
    assert of_this_project("/Users/ann/src/app", "/root/src/app")
    assert not of_this_project("/home/ann/src/app", "/Users/ann/work/app")
    assert not of_this_project("/home/ann", "/home/bob/anything")
    assert not of_this_project("/srv/app", "/home/ann/srv/app")
    assert of_this_project("app", "/Users/bob/work/app/src")  # a named project, wherever it is checked out
    assert not of_this_project("app", "/Users/bob/work/apple")
    assert not of_this_project(None, "/home/ann/src/app") and not of_this_project("/home/ann/src/app", None)
    assert locate.serves("/home/ann/src/app/.quipu", "/home/ann/src/app/pkg")
    assert not locate.serves("/home/ann/src/app/.quipu", "/home/ann/src/other")
    assert not locate.serves("/home/ann/.local/share/quipu/store", "/home/ann/.local/share/quipu/store/x")


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home = tmp_path / "qh"
    monkeypatch.setenv("QUIPU_HOME", str(home))
    places = {name: tmp_path / "src" / name for name in ("app", "site", "tools")}
    for folder in places.values():
        (folder / "pkg").mkdir(parents=True)
    user = make_store(home / "store")
    add_all(user, [
        memory("todo-checkboxes", "TODO list convention",
               "When you edit TODO.md, open items start with - [ ] and finished ones with - [x].",
               project=str(places["app"])),
        memory("changelog-dates", "Changelog entries",
               "Every entry in CHANGELOG.md starts with the release date.", project=str(places["site"])),
        memory("notes-short", "Keep the notes file short", "NOTES.md stays under two hundred lines."),
    ])
    add_all(make_store(places["tools"] / ".quipu"), [
        memory("log-newest-first", "Work log", "After each change, add a line at the top of LOG.md."),
    ])
    return {**places, "home": home}


def injected(prompt: str, cwd: Path, session: str) -> str:
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(cwd),
                        "transcript_path": "", "prompt": prompt})
    proc = run_prompt_hook(event)
    assert proc.returncode == 0 and proc.stderr == b""
    return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]) if proc.stdout else ""


def test_a_file_named_in_passing_recalls_the_memory_of_this_project_about_it(places: dict[str, Path]) -> None:
    assert "todo-checkboxes" in injected(REQUEST.format(file="TODO.md"), places["app"] / "pkg", "s1")
    # the same request in another project: that project's TODO.md is another file
    assert injected(REQUEST.format(file="TODO.md"), places["site"], "s2") == ""
    assert "changelog-dates" in injected(REQUEST.format(file="CHANGELOG.md"), places["site"], "s3")
    assert injected(REQUEST.format(file="CHANGELOG.md"), places["app"], "s4") == ""
    # a file is a subject even among everyday words only
    assert "todo-checkboxes" in injected("ok, update @TODO.md", places["app"], "s11")
    assert injected("ok, update @TODO.md", places["site"], "s12") == ""
    # a project's own store: each of its memories is of that project, with no project field
    assert "log-newest-first" in injected(REQUEST.format(file="LOG.md"), places["tools"] / "pkg", "s5")
    assert injected(REQUEST.format(file="LOG.md"), places["app"], "s6") == ""


def test_a_memory_of_no_project_needs_the_prompts_words_as_well(places: dict[str, Path]) -> None:
    """A file name alone does not make a memory of no project speak: which project's file it
    means is unknown, and "pyproject.toml" or "README.md" are in every project."""
    assert injected(REQUEST.format(file="NOTES.md"), places["app"], "s7") == ""
    assert "notes-short" in injected("how many lines may @NOTES.md have, is it still short?", places["app"], "s8")


def test_quipu_add_records_the_project_folder_and_the_hook_recalls_there(places: dict[str, Path]) -> None:
    app = places["app"]
    proc = quipu("add", "--id", "release-script", "--title", "Release script", "--project", ".",
                 "Cut a release with ./release.sh, never by hand.", cwd=app)
    assert proc.returncode == 0, proc.stderr
    assert Store(places["home"] / "store").get("release-script").project == str(app)
    assert "release-script" in injected(REQUEST.format(file="release.sh"), app / "pkg", "s9")
    assert injected(REQUEST.format(file="release.sh"), places["site"], "s10") == ""
    explained = quipu("recall", "--explain", REQUEST.format(file="release.sh"), cwd=app)
    assert "release.sh (named by 1)" in explained.stdout and "release-script" in explained.stdout


@pytest.mark.skipif(DATA is None, reason=R.MISSING_DATA)
def test_real_prompts_that_name_a_file_recall_their_projects_note_about_it(tmp_path: Path) -> None:
    """Real developer prompts paired with the real notes of their own project that answer them
    (bench/data/real_pairs*.json), where the note names a file the prompt names; each note is a
    memory of its repository's project, and the prompt is typed in that repository."""
    assert DATA is not None
    notes = {R.note_id(n): n for n in R.real_notes(DATA)}
    prompts = {hashlib.sha1(p.text.encode("utf-8")).hexdigest(): p for p in R.real_prompts(DATA, "topical")}
    store = R.realistic_store(tmp_path / "store", notes.values())
    cases = []
    for name in ("real_pairs.json", "real_pairs_2.json"):
        for pair in json.loads((PAIRS / name).read_text(encoding="utf-8"))["pairs"]:
            prompt = prompts[pair["prompt_sha1"]]
            own = {i for i in pair["notes"] if notes[i].repo == prompt.repo
                   and any(f in f"{notes[i].title} {notes[i].body}".lower() for f in named_files(prompt.text))}
            if own:
                cases.append((prompt, own))
    assert len(cases) >= 20
    db = index.open_fresh(store)
    try:
        options = recall.Options.from_config(indexread.index_config(db))

        def found(prompt: R.Prompt, own: set[str], cwd: str) -> bool:
            options.cwd = cwd
            return bool(own & {h.id for h in recall.recall(db, prompt.text, prompt.previous, options).hits})

        here = sum(found(p, own, R.project_dir(p.repo)) for p, own in cases)
        elsewhere = sum(found(p, own, R.project_dir("someone/else")) for p, own in cases)
    finally:
        db.close()
    assert here >= 0.8 * len(cases), (here, len(cases))
    assert elsewhere <= 0.1 * len(cases), (elsewhere, len(cases))


def test_a_store_synced_to_another_machine_recalls_the_project_memory_in_the_same_place(tmp_path: Path) -> None:
    """Ann's laptop keeps her projects in /home/ann/src, her other machine in /Users/ann/src: the
    project memory she added on one is of the same project on the other, after `quipu sync` and
    `quipu clone`; a folder of the same name elsewhere is another project."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    laptop = {"QUIPU_HOME": str(tmp_path / "laptop")}
    assert quipu("init", env=laptop).returncode == 0
    added = quipu("add", "--id", "todo-checkboxes", "--title", "TODO list convention", "--project",
                  "/home/ann/src/app", "When you edit TODO.md, open items start with - [ ] and done ones with - [x].",
                  env=laptop)
    assert added.returncode == 0, added.stderr
    assert quipu("sync", "--set-remote", str(remote), env=laptop).returncode == 0
    desk = {"QUIPU_HOME": str(tmp_path / "desk")}
    cloned = quipu("clone", str(remote), env=desk)
    assert cloned.returncode == 0, cloned.stderr

    def on_desk(cwd: str, session: str) -> str:
        event = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": cwd,
                            "transcript_path": "", "prompt": REQUEST.format(file="TODO.md")})
        proc = run_prompt_hook(event, env=desk)
        assert proc.returncode == 0 and proc.stderr == b""
        return proc.stdout.decode()

    assert "todo-checkboxes" in on_desk("/Users/ann/src/app/pkg", "d1")
    assert on_desk("/Users/ann/work/app", "d2") == ""


def test_a_memory_of_another_project_speaks_only_on_strong_evidence(places: dict[str, Path]) -> None:
    """What is true of one project is often not of another: typed in another project's folder, a
    question that recalls the memory in its own project needs strong evidence for it."""
    add_all(Store(places["home"] / "store"), [
        memory("site-ledger", "Ledger reconciliation", "The ledger reconciles payments nightly in the worker.",
               project=str(places["site"])),
    ])
    question = "how does the ledger reconcile?"
    assert "site-ledger" in injected(question, places["site"] / "pkg", "o1")
    assert injected(question, places["app"], "o2") == ""
    explained = quipu("recall", "--explain", question, cwd=places["app"])
    assert "site-ledger: a memory of another project than this folder's" in explained.stdout, explained.stdout
    # strong evidence still speaks anywhere: the memory's own specific words
    assert "site-ledger" in injected("the ledger reconciles payments nightly in the worker, right?", places["app"], "o3")


def test_the_project_of_a_folder_is_the_work_tree_holding_it(tmp_path: Path) -> None:
    repo = tmp_path / "app"
    (repo / "pkg" / "deep").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start")
    git(repo, "worktree", "add", "-q", str(tmp_path / "app-fix"))
    assert locate.project_root(str(repo / "pkg" / "deep")) == str(repo)
    assert locate.project_root(str(tmp_path / "app-fix")) == str(repo)  # a linked worktree: its main checkout
    loose = tmp_path / "loose" / "folder"
    loose.mkdir(parents=True)
    assert locate.project_root(str(loose)) == str(loose)


def test_a_home_folder_kept_in_git_is_no_project_of_the_folders_below_it(
        places: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home folder under git for its dotfiles holds every project of its person: a session in a
    loose folder there records that folder, not the home, and a memory that records a home folder
    (as one written by hand, or before this rule, may) speaks in no project on a file name alone."""
    home = tmp_path / "ann"
    (home / "scratch").mkdir(parents=True)
    git(home, "init", "-q")
    monkeypatch.setenv("HOME", str(home))
    assert locate.project_root(str(home / "scratch")) == str(home / "scratch")
    assert locate.project_root(str(home)) == str(home)  # a session in the home folder itself
    assert locate.broad(str(home)) and locate.broad("/home/bob") and locate.broad("/Users/bob")
    assert locate.broad("/root") and locate.broad("/") and not locate.broad("/home/bob/src")
    assert not of_this_project("/home/bob", "/home/bob/src/app") and not of_this_project(str(home), str(home))
    add_all(Store(places["home"] / "store"), [
        memory("home-todo", "TODO everywhere", "Sort TODO.md by severity, blockers first.", project=str(home)),
        memory("root-todo", "TODO at the root", "Sort TODO.md by priority.", project="/"),
    ])
    # a memory of a home folder is taken as one of no project: a file name alone does not make it
    # speak, and it is no other project's either (its own words are evidence enough)
    assert injected("ok, update @TODO.md", home / "scratch", "h1") == ""
    assert "todo-checkboxes" in injected("ok, update @TODO.md", places["app"], "h2")
    assert "home-todo" in injected("should TODO.md be sorted by severity, blockers first?", places["site"], "h3")


def test_every_import_records_the_project_it_is_given(places: dict[str, Path], tmp_path: Path) -> None:
    """`quipu import KIND ... --project` records the project on every memory it imports, whatever
    the kind (it was once read by one kind only and silently dropped by the others), and the hook
    then recalls a note about a file in that project only."""
    app, site = places["app"], places["site"]
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.md").write_text("# TODO convention\n\nOpen items in TODO.md start with - [ ].\n")
    done = quipu("import", "markdown", str(folder), "--project", ".", "--json", cwd=app)
    assert done.returncode == 0, done.stderr
    [mid] = json.loads(done.stdout)["imported"]
    assert Store(places["home"] / "store").get(mid).project == str(app.resolve())
    assert mid in injected("ok, update @TODO.md", app / "pkg", "i1")
    assert injected("ok, update @TODO.md", site, "i2") == ""

    project = tmp_path / "basic-memory"
    project.mkdir()
    (project / "changelog.md").write_text("---\ntitle: Changelog dates\ntype: note\n---\n\n"
                                          "- [rule] Each entry of CHANGELOG.md starts with the release date\n")
    done = quipu("import", "basic-memory", str(project), "--project", "site", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [mid] = json.loads(done.stdout)["imported"]
    assert Store(places["home"] / "store").get(mid).project == "site"  # a name: any folder called site
    assert mid in injected(REQUEST.format(file="CHANGELOG.md"), site, "i3")
    assert injected(REQUEST.format(file="CHANGELOG.md"), places["tools"], "i4") == ""

    # a path through a link is recorded as the folder itself, the working folder the hook is told
    link = tmp_path / "link-to-app"
    link.symlink_to(app)
    again = quipu("add", "--project", str(link), "--title", "Release script", "Cut a release with ./release.sh.", "--json")
    assert again.returncode == 0, again.stderr
    assert Store(places["home"] / "store").get(json.loads(again.stdout)["id"]).project == str(app.resolve())

    bad = quipu("import", "markdown", str(folder), "--project", "two\nlines", cwd=app)
    assert bad.returncode == 2 and "--project" in bad.stderr and "one line" in bad.stderr, bad.stderr


def test_quipu_list_shows_the_memories_of_a_project_as_the_hook_takes_them(places: dict[str, Path]) -> None:
    def listed(*argv: str, cwd: Path) -> dict[str, object]:
        proc = quipu("list", "--json", *argv, cwd=cwd)
        assert proc.returncode == 0, proc.stderr
        return {m["id"]: m["project"] for m in json.loads(proc.stdout)}

    everything = listed(cwd=places["app"])
    assert everything["todo-checkboxes"] == str(places["app"]) and everything["notes-short"] is None
    assert set(listed("--project", ".", cwd=places["app"] / "pkg")) == {"todo-checkboxes"}  # a subfolder: its project
    assert set(listed("--project", "site", cwd=places["app"])) == {"changelog-dates"}  # a name: the folder so named
    assert set(listed("--project", "none", cwd=places["app"])) == {"notes-short"}
    # in a project with its own store, the per-user store is listed too: the hook reads both, and
    # every memory of the project's own store is that project's
    add_all(Store(places["home"] / "store"), [
        memory("tools-release", "Tools release", "Cut a tools release with make dist.", project=str(places["tools"])),
    ])
    inside = quipu("list", "--json", "--project", ".", cwd=places["tools"] / "pkg")
    assert {(m["id"], m.get("store")) for m in json.loads(inside.stdout)} == {
        ("log-newest-first", "project"), ("tools-release", "user")}
    assert set(listed("--project", "tools", cwd=places["app"])) == {"tools-release"}  # from app: the user store only
    table = quipu("list", cwd=places["tools"]).stdout
    assert table.splitlines()[0].split()[:2] == ["store", "id"] and "notes-short" in table
    # a change acts on the project's store there: the error names the store that holds the memory
    refused = quipu("label", "tools-release", "unverified", cwd=places["tools"])
    user_store = places["home"] / "store"
    assert refused.returncode == 1 and "tools-release is in the per-user store" in refused.stderr
    assert f"add --store {user_store}" in refused.stderr, refused.stderr
    assert quipu("--store", str(user_store), "label", "tools-release", "unverified", cwd=places["tools"]).returncode == 0
    labelled = git(user_store, "rev-parse", "--short", "HEAD").strip()
    undo = quipu("undo", labelled, cwd=places["tools"])
    assert undo.returncode == 1 and f"commit {labelled} is in the per-user store" in undo.stderr, undo.stderr
    assert quipu("--store", str(user_store), "undo", labelled, cwd=places["tools"]).returncode == 0
    logged = quipu("log", cwd=places["tools"]).stdout.splitlines()
    assert logged[-1].endswith(f"the per-user store's: `quipu --store {user_store} log`)") and labelled not in "".join(logged)
    bad = quipu("list", "--project", "a\nb", cwd=places["app"])
    assert bad.returncode == 2 and "--project" in bad.stderr
