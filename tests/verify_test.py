"""`quipu verify`: claims extracted, validated, checked against real things; labels as commits.

Real parts throughout: stores in tmp git repositories, a real project repository with branches,
real files, the real claim cache, fake `gh`/`git`/`doppler`/`aws` executables on PATH that log
their argv. Only the model is replaced: by ``ScriptedModel``, or (through the CLI) by a
`command:` model script that answers from a JSON file.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from quipu.index import index
from quipu.verify.claims import ANSWER_SCHEMA, ClaimCache, DeterministicExtractor, ModelExtractor, cache_path
from quipu.store.memory import render_memory
from quipu.model import ScriptedModel
from quipu.probes import describe
from quipu.prompt.recall import Options as RecallOptions
from quipu.prompt.recall import recall
from quipu.prompt.inject import format_context
from quipu.store.store import Store
from quipu.verify.verify import LABEL, Options, verify
from testing.fixtures import add_all, git, make_store, memory, quipu

PROBE_FIXTURES = Path(__file__).parent / "probes" / "fixtures"
HOSTILE = json.loads((PROBE_FIXTURES / "hostile_extractions.json").read_text())

_FAKE_TOOL = """#!{python} -I
import json, sys
with open({log!r}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
sys.stdout.write({stdout!r})
sys.exit({code!r})
"""

# A `command:` model: reads quipu's request on stdin, answers the claims listed for that memory id.
_MODEL_SCRIPT = """
import json, re, sys
request = json.load(sys.stdin)
memory_id = re.search(r'<memory id="([^"]+)">', request["prompt"]).group(1)
with open(sys.argv[2], "a") as log:
    log.write(memory_id + "\\n")
answers = json.load(open(sys.argv[1]))
print(json.dumps({"claims": answers.get(memory_id, [])}))
"""


def fake_tool(bin_dir: Path, name: str, *, stdout_fixture: str = "", code: int = 0) -> Path:
    """A fake CLI on PATH: logs its argv to ``<bin>/<name>.log`` and prints a recorded answer."""
    stdout = (PROBE_FIXTURES / stdout_fixture).read_text() if stdout_fixture else ""
    script = bin_dir / name
    log = bin_dir / f"{name}.log"
    script.write_text(_FAKE_TOOL.format(python=sys.executable, log=str(log), stdout=stdout, code=code))
    script.chmod(0o755)
    return log


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def labels(store: Store) -> dict[str, str]:
    rows = index.rows(store, "SELECT id, label_details FROM memories")
    return {r["id"]: json.loads(r["label_details"]).get(LABEL) for r in rows if LABEL in json.loads(r["label_details"])}


def label_commits(store: Store) -> list[str]:
    return [e.commit for e in store.log() if e.action in ("label", "unlabel")]


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A real project repository: a file, branches main and feature/login."""
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('shop')\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "src/app.py")
    git(root, "commit", "-q", "-m", "first")
    git(root, "branch", "feature/login")
    return root


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    d = tmp_path / "fakebin"
    d.mkdir()
    return d


def options(home: Path, shop: Path | None = None, **kw: Any) -> Options:
    roots = {"shop": str(shop)} if shop is not None else {}
    return Options(home=str(home), roots=roots, timeout=10.0, **kw)


# ---------------------------------------------------------------- end to end, through the CLI


def test_end_to_end_run_labels_dead_path_open_pr_and_missing_branch_and_undo_removes_them(
    tmp_path: Path, shop: Path, bin_dir: Path, quipu_env: Path
) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [
        memory("dead-path", "Checkout handler location", "The checkout handler lives in `src/checkout.py`.\n",
               project="shop"),
        memory("live-path", "Shop entry point", "The entry point is `src/app.py`.\n", project="shop"),
        memory("pr-called-open", "Refund pull request", "PR octo/shop#42 adding refunds is still open.\n",
               project="shop"),
        memory("pr-said-merged", "Coupon pull request", "PR octo/shop#7 with coupons was merged last week.\n",
               project="shop"),
        memory("missing-branch", "Payments branch", "Payments work happens on branch feature/payments.\n",
               project="shop"),
        memory("live-branch", "Login branch", "Login work happens on branch feature/login.\n", project="shop"),
    ])
    answers = {
        "dead-path": [{"probe": "path-exists", "args": {"root": "shop", "path": "src/checkout.py"},
                       "quote": "The checkout handler lives in `src/checkout.py`."}],
        "live-path": [{"probe": "path-exists", "args": {"root": "shop", "path": "src/app.py"}, "quote": "x"}],
        "pr-called-open": [{"probe": "pr-merged", "args": {"repo": "octo/shop", "number": 42, "state": "open"},
                            "quote": "PR octo/shop#42 adding refunds is still open."}],
        "pr-said-merged": [{"probe": "pr-merged", "args": {"repo": "octo/shop", "number": 7, "state": "merged"},
                            "quote": "PR octo/shop#7 with coupons was merged last week."}],
        "missing-branch": [{"probe": "git-branch-exists",
                            "args": {"root": "shop", "repo": ".", "branch": "feature/payments"}, "quote": "x"}],
        "live-branch": [{"probe": "git-branch-exists",
                         "args": {"root": "shop", "repo": ".", "branch": "feature/login"}, "quote": "x"}],
    }
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    (tmp_path / "model.py").write_text(_MODEL_SCRIPT)
    model_log = tmp_path / "model.log"
    gh_log = fake_tool(bin_dir, "gh", stdout_fixture="gh/pr_view_open.json")  # GitHub says #7 is open
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    model = f"command:{sys.executable} {tmp_path / 'model.py'} {tmp_path / 'answers.json'} {model_log}"

    proc = quipu("--store", str(store.root), "verify", "--all", "--model", model, "--root", f"shop={shop}",
                 "--json", env=env)

    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert {k: summary[k] for k in ("memories", "extracted", "passed", "failed", "unknown", "refused",
                                    "pr_state_refused", "labelled", "cleared")} == {
        "memories": 6, "extracted": 6, "passed": 2, "failed": 3, "unknown": 0, "refused": 0,
        "pr_state_refused": 1, "labelled": 3, "cleared": 0,
    }
    assert calls(gh_log) == [["pr", "view", "7", "--repo", "octo/shop", "--json", "state,mergedAt"]]
    assert labels(store) == {
        "dead-path": "path-exists: src/checkout.py (under shop) does not exist",
        "pr-said-merged": "pr-merged: octo/shop#7 is open, not merged",
        "missing-branch": "git-branch-exists: no branch feature/payments in shop",
    }
    run_id = summary["run"]
    assert {e.trailers.get("Quipu-Sweep") for e in store.log(action="label")} == {run_id}
    refused_log = [json.loads(line) for line in (store.cache_dir / "verify.log").read_text().splitlines()]
    assert [(e["memory"], e["kind"]) for e in refused_log if e["kind"] == "refused"] == [("pr-called-open", "refused")]

    db = index.open_fresh(store)
    try:
        hits = recall(db, "where does the checkout handler live", options=RecallOptions(min_score=0, limit=3)).hits
    finally:
        db.close()
    assert hits[0].id == "dead-path"
    assert "unverified" in format_context(hits[:1])

    shown = quipu("--store", str(store.root), "show", "dead-path")
    assert "Claims:" in shown.stdout
    assert "fail    path-exists  src/checkout.py (under shop) does not exist" in shown.stdout

    undo = quipu("--store", str(store.root), "undo", "--sweep", run_id)

    assert undo.returncode == 0, undo.stderr
    assert labels(store) == {}
    db = index.open_fresh(store)
    try:
        hits = recall(db, "where does the checkout handler live", options=RecallOptions(min_score=0, limit=3)).hits
    finally:
        db.close()
    assert "unverified" not in format_context(hits[:1])

    again = quipu("--store", str(store.root), "verify", "--all", "--model", model, "--root", f"shop={shop}",
                  "--json", env=env)
    assert json.loads(again.stdout)["labelled"] == 3  # undone labels come back when the claims still fail
    assert len(model_log.read_text().splitlines()) == 6  # ...from cached extractions: no second model call


def test_summary_table_names_each_count_and_the_undo_command(tmp_path: Path, shop: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("dead-path", "Checkout handler", "It is `src/checkout.py`.\n", project="shop")])

    proc = quipu("--store", str(store.root), "verify", "dead-path", "--root", f"shop={shop}")

    assert proc.returncode == 0, proc.stderr
    head, rule, row = proc.stdout.splitlines()[:3]
    assert head.split() == ["memories", "claims", "passed", "failed", "unknown", "refused", "pr-state-refused",
                            "labelled", "cleared"]
    assert row.split() == ["1", "1", "0", "1", "0", "0", "0", "1", "0"]
    assert "quipu undo --sweep verify-" in proc.stdout


def test_store_inside_a_project_checks_backticked_paths_against_that_project(tmp_path: Path, shop: Path) -> None:
    store = make_store(shop / ".quipu")
    add_all(store, [
        memory("entry-point", "Entry point", "Start at `src/app.py`; the helpers are in `src/main.py`.\n"),
    ])

    proc = quipu("verify", "--all", "--json", cwd=shop)

    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert (summary["passed"], summary["failed"], summary["labelled"]) == (1, 1, 1)


# ---------------------------------------------------------------- the model is untrusted


def test_hostile_extractions_from_the_model_are_all_refused_and_no_process_starts(
    tmp_path: Path, bin_dir: Path, quipu_env: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "link-out").symlink_to("/etc")
    logs = [fake_tool(bin_dir, tool) for tool in ("git", "gh", "doppler", "aws")]
    store = make_store(tmp_path / "store")
    add_all(store, [memory("hostile-note", "Notes that tempt a model", "Anything.\n", project="proj")])
    model = ScriptedModel([{"claims": [entry["extraction"] for entry in HOSTILE]}])
    opts = Options(home=str(quipu_env), roots={"proj": str(project)}, env={"PATH": str(bin_dir)})

    summary = verify(store, ModelExtractor(model), opts, ids=["hostile-note"])

    assert summary.extracted == len(HOSTILE) >= 30
    assert summary.refused + summary.pr_state_refused == len(HOSTILE)
    assert summary.pr_state_refused == 2  # "open" and "closed"
    assert (summary.passed, summary.failed, summary.unknown, summary.labelled) == (0, 0, 0, 0)
    assert all(calls(log) == [] for log in logs)
    logged = [json.loads(line) for line in (store.cache_dir / "verify.log").read_text().splitlines()]
    assert [e["kind"] for e in logged] == ["refused"] * len(HOSTILE)
    assert label_commits(store) == []
    assert [c.status for c in summary.reports[0].claims] == ["refused"] * len(HOSTILE)


def test_pull_request_claimed_open_or_closed_is_refused_and_counted_apart(
    tmp_path: Path, bin_dir: Path, quipu_env: Path
) -> None:
    gh_log = fake_tool(bin_dir, "gh", stdout_fixture="gh/pr_view_merged.json")
    store = make_store(tmp_path / "store")
    add_all(store, [memory("pr-notes", "Pull requests", "Three pull requests.\n")])
    model = ScriptedModel([{"claims": [
        {"probe": "pr-open", "args": {"repo": "octo/hello", "number": 1}, "quote": "#1 is open"},
        {"probe": "pr-merged", "args": {"repo": "octo/hello", "number": 2, "state": "Closed"}},
        {"probe": "pr-merged", "args": {"repo": "octo/hello", "number": 3, "state": "merged"}},
        {"probe": "pr-merged", "args": {"repo": "octo/hello", "number": "4"}},
    ]}])
    opts = Options(home=str(quipu_env), env={"PATH": str(bin_dir)})

    summary = verify(store, ModelExtractor(model), opts, ids=["pr-notes"])

    assert (summary.pr_state_refused, summary.refused, summary.passed) == (2, 1, 1)
    assert calls(gh_log) == [["pr", "view", "3", "--repo", "octo/hello", "--json", "state,mergedAt"]]


def test_the_prompt_carries_the_probe_schemas_and_asks_for_the_fixed_shape(tmp_path: Path, quipu_env: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("some-note", "A note", "Nothing to check.\n", project="shop")])
    model = ScriptedModel([{"claims": []}])

    verify(store, ModelExtractor(model), options(quipu_env), ids=["some-note"])

    prompt, schema, _purpose = model.calls[0]
    assert schema == ANSWER_SCHEMA
    assert all(f"- {name}: {json.dumps(args, sort_keys=True)}" in prompt for name, args in describe().items())
    assert 'root "shop"' in prompt and '<memory id="some-note">' in prompt


def test_an_answer_that_is_not_json_skips_that_memory_and_the_run_goes_on(
    tmp_path: Path, shop: Path, quipu_env: Path
) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [
        memory("aaa-garbled", "Garbled", "x\n", project="shop"),
        memory("bbb-fine", "Fine", "x\n", project="shop"),
    ])
    model = ScriptedModel(["I think the path exists!", {"claims": [
        {"probe": "path-exists", "args": {"root": "shop", "path": "src/app.py"}}]}])

    summary = verify(store, ModelExtractor(model), options(quipu_env, shop), ids=["aaa-garbled", "bbb-fine"])

    assert (summary.extraction_errors, summary.memories, summary.passed) == (1, 1, 1)
    with ClaimCache(cache_path(store.cache_dir)) as cache:
        assert cache.db.execute("SELECT memory FROM extractions").fetchall() == [("bbb-fine",)]


# ---------------------------------------------------------------- the cache


def test_verifying_an_unchanged_memory_twice_calls_the_model_once(tmp_path: Path, shop: Path, quipu_env: Path) -> None:
    store = make_store(tmp_path / "store")
    note = memory("entry-note", "Entry", "Start at `src/app.py`.\n", project="shop")
    add_all(store, [note])
    answer = {"claims": [{"probe": "path-exists", "args": {"root": "shop", "path": "src/app.py"}}]}
    model = ScriptedModel(responder=lambda prompt, schema, purpose: answer)
    extractor = ModelExtractor(model)

    first = verify(store, extractor, options(quipu_env, shop), ids=["entry-note"])
    second = verify(store, extractor, options(quipu_env, shop), ids=["entry-note"])

    assert len(model.calls) == 1
    assert (first.extractions, first.cached, second.extractions, second.cached) == (1, 0, 0, 1)
    assert first.passed == second.passed == 1

    store.add(note.with_changes(body="Start at `src/app.py`, always.\n"), overwrite=True)
    verify(store, extractor, options(quipu_env, shop), ids=["entry-note"])
    assert len(model.calls) == 2  # new content, new extraction


def test_a_cached_extraction_is_validated_again_under_this_run_s_roots(
    tmp_path: Path, shop: Path, quipu_env: Path
) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("entry-note", "Entry", "Start at `src/app.py`.\n", project="shop")])

    first = verify(store, DeterministicExtractor(), options(quipu_env, shop), ids=["entry-note"])
    second = verify(store, DeterministicExtractor(), options(quipu_env), ids=["entry-note"])

    assert (first.passed, second.cached, second.unknown) == (1, 1, 1)
    detail = second.reports[0].claims[0].detail
    assert "--root shop=PATH" in detail


# ---------------------------------------------------------------- labels


def test_a_later_pass_that_sees_the_claims_hold_clears_the_label(tmp_path: Path, shop: Path, quipu_env: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("config-note", "Config", "Settings live in `src/config.toml`.\n", project="shop")])
    extractor = DeterministicExtractor()

    first = verify(store, extractor, options(quipu_env, shop), ids=["config-note"])
    again = verify(store, extractor, options(quipu_env, shop), ids=["config-note"])
    (shop / "src" / "config.toml").write_text("debug = false\n")
    fixed = verify(store, extractor, options(quipu_env, shop), ids=["config-note"])
    after = verify(store, extractor, options(quipu_env, shop), ids=["config-note"])

    assert (first.labelled, again.labelled, fixed.cleared, after.cleared) == (1, 0, 1, 0)
    assert [e.action for e in store.log(memory="config-note")] == ["unlabel", "label", "add"]
    assert labels(store) == {}


def test_unknown_changes_no_label(tmp_path: Path, shop: Path, quipu_env: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("config-note", "Config", "Settings live in `src/config.toml`.\n", project="shop")])
    verify(store, DeterministicExtractor(), options(quipu_env, shop), ids=["config-note"])
    (shop / "src" / "config.toml").write_text("debug = false\n")

    summary = verify(store, DeterministicExtractor(), options(quipu_env), ids=["config-note"])  # no folder for shop

    assert (summary.unknown, summary.cleared, summary.labelled) == (1, 0, 0)
    assert list(labels(store)) == ["config-note"]
    assert len(label_commits(store)) == 1


def test_a_label_a_person_set_is_not_cleared_by_verify(tmp_path: Path, shop: Path, quipu_env: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("entry-note", "Entry", "Start at `src/app.py`.\n", project="shop")])
    store.label("entry-note", LABEL, True, detail="I doubt this")

    summary = verify(store, DeterministicExtractor(), options(quipu_env, shop), ids=["entry-note"])

    assert (summary.passed, summary.cleared) == (1, 0)
    assert labels(store) == {"entry-note": "I doubt this"}


def test_undo_of_a_label_commit_leaves_a_later_edit_of_the_memory_alone(
    tmp_path: Path, shop: Path, quipu_env: Path
) -> None:
    store = make_store(tmp_path / "store")
    note = memory("config-note", "Config", "Settings live in `src/config.toml`.\n", project="shop")
    add_all(store, [note])
    summary = verify(store, DeterministicExtractor(), options(quipu_env, shop), ids=["config-note"])
    store.add(note.with_changes(body="Settings live in `src/settings.toml`.\n"), overwrite=True)

    store.undo(commit=summary.commits[0])

    assert labels(store) == {}
    assert "settings.toml" in store.get("config-note").body


def test_probe_filter_checks_only_that_probe_and_never_clears(
    tmp_path: Path, shop: Path, bin_dir: Path, quipu_env: Path
) -> None:
    gh_log = fake_tool(bin_dir, "gh", stdout_fixture="gh/pr_view_merged.json")
    store = make_store(tmp_path / "store")
    add_all(store, [memory("mixed-note", "Mixed", "x\n", project="shop")])
    answer = {"claims": [
        {"probe": "path-exists", "args": {"root": "shop", "path": "src/app.py"}},
        {"probe": "pr-merged", "args": {"repo": "octo/shop", "number": 7}},
    ]}
    extractor = ModelExtractor(ScriptedModel(responder=lambda *a: answer))
    store.label("mixed-note", LABEL, True, detail="from an earlier run", extra={"source": "verify"})
    opts = options(quipu_env, shop, env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})

    only_paths = verify(store, extractor, opts._replace(probe="path-exists"), ids=["mixed-note"])

    assert (only_paths.extracted, only_paths.passed, only_paths.cleared) == (1, 1, 0)
    assert calls(gh_log) == []
    everything = verify(store, extractor, opts, ids=["mixed-note"])
    assert (everything.passed, everything.cleared) == (2, 1)


def test_show_lists_each_claim_with_its_probe_result_and_time(tmp_path: Path, shop: Path, quipu_env: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("two-paths", "Paths", "See `src/app.py` and `src/gone.py`.\n", project="shop")])
    verify(store, DeterministicExtractor(), options(quipu_env, shop), ids=["two-paths"])

    proc = quipu("--store", str(store.root), "show", "two-paths", "--json")

    claims = json.loads(proc.stdout)["claims"]
    assert [(c["probe"], c["status"], c["args"]["path"]) for c in claims] == [
        ("path-exists", "pass", "src/app.py"), ("path-exists", "fail", "src/gone.py")]
    assert all(c["checked_at"] and c["quote"] == "See `src/app.py` and `src/gone.py`." for c in claims)


# ---------------------------------------------------------------- the command line


@pytest.mark.parametrize(("argv", "message", "code"), [
    (["--all", "--probe", "shell"], "unknown probe 'shell'", 2),
    (["--all", "--root", "shop"], "expected NAME=PATH", 2),
    (["--all", "--root", "home=/tmp"], "'home' is reserved", 2),
    (["--all", "--root", "shop=/nonexistent/quipu/shop"], "is not a folder", 1),
    (["--all", "--model", "gpt"], "unknown model", 2),
])
def test_verify_refuses_bad_options_with_the_fix(tmp_path: Path, argv: list[str], message: str, code: int) -> None:
    """An option that is not one is a usage error (2); a folder that is not there, a fact to fix (1)."""
    store = make_store(tmp_path / "store")

    proc = quipu("--store", str(store.root), "verify", *argv)

    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr


def test_absolute_paths_in_a_memory_are_claims_checked_under_the_allowed_roots(tmp_path: Path, shop: Path) -> None:
    """Issue 12: without a model, an absolute path in backticks was never extracted, so a dead
    one was never labelled. One under a root quipu may look at (the project, home) is checked;
    one elsewhere is counted as not checked, never guessed."""
    store = make_store(shop / ".quipu")
    body = (f"Start at `{shop}/src/app.py` or `./src/app.py`; the deploy script is `{shop}/deploy.sh`,\n"
            "with a copy in `/srv/app/deploy.sh`.\n")
    add_all(store, [memory("abs-paths", "Absolute paths", body)])

    proc = quipu("verify", "--all", "--json", cwd=shop)

    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert (summary["passed"], summary["failed"], summary["refused"], summary["labelled"]) == (2, 1, 1, 1), summary


def _claims(summary: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["status"], c["detail"]) for r in summary["memories_checked"] for c in r["claims"]]


def test_a_store_of_its_own_checks_absolute_and_home_paths_under_your_home(tmp_path: Path, quipu_env: Path) -> None:
    """Issue 12: absolute paths are the commonest in developer notes. In a store that is no
    project's, `~/...` and an absolute path under your home are checked (a dead one labels the
    memory); one elsewhere on the machine is not probed, because a shared store must not learn
    what exists on it."""
    (quipu_env / "notes").mkdir()
    (quipu_env / "notes" / "runbook.md").write_text("steps\n")
    store = make_store(tmp_path / "store")
    body = (f"The runbook is `~/notes/runbook.md` (also `{quipu_env}/notes/runbook.md`); the old one, "
            f"`~/notes/old-runbook.md`, and `{quipu_env}/bin/deploy.sh` are still read. Servers run `/srv/app/deploy.sh`.\n")
    add_all(store, [memory("home-paths", "Runbook paths", body)])

    proc = quipu("--store", str(store.root), "verify", "--all", "--json")

    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert _claims(summary) == [
        ("pass", "notes/runbook.md (under home) exists"),
        ("pass", f"{quipu_env}/notes/runbook.md exists"),
        ("fail", "notes/old-runbook.md (under home) does not exist"),
        ("fail", f"{quipu_env}/bin/deploy.sh does not exist"),
        ("refused", "path: '/srv/app/deploy.sh' is outside the allowed roots"),
    ]
    assert labels(store) == {"home-paths": "path-exists: notes/old-runbook.md (under home) does not exist "
                                           "(and 1 more failed claim)"}


@pytest.mark.parametrize("how", ["flag", "environment", "user config"])
def test_you_can_have_absolute_paths_checked_anywhere(tmp_path: Path, how: str) -> None:
    """Issue 12: a dead `/srv/app/deploy.sh` is labelled once you allow paths anywhere, by a flag,
    the environment or your own config: never by the store."""
    elsewhere = tmp_path / "srv" / "app"
    elsewhere.mkdir(parents=True)
    (elsewhere / "run.sh").write_text("#!/bin/sh\n")
    store = make_store(tmp_path / "store")
    add_all(store, [memory("srv-paths", "Server scripts",
                           f"Start with `{elsewhere}/run.sh`; `{elsewhere}/deploy.sh` deploys.\n")])
    before = json.loads(quipu("--store", str(store.root), "verify", "--all", "--json").stdout)
    assert [status for status, _ in _claims(before)] == ["refused", "refused"]

    argv, env = ["--store", str(store.root), "verify", "--all", "--json"], {}
    if how == "flag":
        argv.append("--check-any-path")
    elif how == "environment":
        env["QUIPU_VERIFY_PATHS"] = "any"
    else:
        config = Path(os.environ["QUIPU_HOME"]) / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text('[verify]\npaths = "any"\n')
    proc = quipu(*argv, env=env)

    assert proc.returncode == 0, proc.stderr
    assert _claims(json.loads(proc.stdout)) == [("pass", f"{elsewhere}/run.sh exists"),
                                                ("fail", f"{elsewhere}/deploy.sh does not exist")]
    assert labels(store) == {"srv-paths": f"path-exists: {elsewhere}/deploy.sh does not exist"}


def test_a_store_cannot_have_paths_checked_anywhere(tmp_path: Path) -> None:
    """The setting is yours: a store's quipu.toml that sets it is ignored, and doctor says where it belongs."""
    store = make_store(tmp_path / "store")
    (store.root / "quipu.toml").write_text((store.root / "quipu.toml").read_text() + '\n[verify]\npaths = "any"\n')
    git(store.root, "commit", "-q", "-am", "team settings")
    add_all(store, [memory("srv-paths", "Server scripts", f"Deploy with `{tmp_path}/srv/deploy.sh`.\n")])

    proc = quipu("--store", str(store.root), "verify", "--all", "--json")

    assert [status for status, _ in _claims(json.loads(proc.stdout))] == ["refused"]
    assert labels(store) == {}
    doctor = quipu("--store", str(store.root), "doctor").stdout.splitlines()
    at = next(i for i, line in enumerate(doctor) if "[verify] paths" in line)
    assert "ignored" in doctor[at] and "--check-any-path" in doctor[at + 1]


def test_a_memory_cannot_make_the_whole_machine_its_project(tmp_path: Path) -> None:
    """A memory's `project` is the store's word: a folder outside your home and your roots (here
    `/`) is no root for its relative paths, so `usr/bin/env` is not probed unless you allow it."""
    store = make_store(tmp_path / "store")
    add_all(store, [memory("root-project", "Machine", "It has `usr/bin/env` and `usr/bin/quipu-nothing/`.\n",
                           project="/")])

    proc = quipu("--store", str(store.root), "verify", "--all", "--json")

    assert proc.returncode == 0, proc.stderr
    checked = _claims(json.loads(proc.stdout))
    assert [status for status, _ in checked] == ["unknown", "unknown"]
    assert "--check-any-path" in checked[0][1]
    allowed = quipu("--store", str(store.root), "verify", "--all", "--json", "--check-any-path")
    assert [status for status, _ in _claims(json.loads(allowed.stdout))] == ["pass", "fail"]


def test_a_path_scope_that_is_not_one_is_refused_with_the_values(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    proc = quipu("--store", str(store.root), "verify", "--all", env={"QUIPU_VERIFY_PATHS": "everywhere"})
    assert proc.returncode == 1
    assert "QUIPU_VERIFY_PATHS: 'everywhere' is not a path scope" in proc.stderr and "roots, any" in proc.stderr


def test_a_memory_committed_as_a_symlink_out_of_the_store_is_never_read(tmp_path: Path) -> None:
    """Even with paths checked anywhere, verify reads memories from git's objects: a memory file
    committed as a symlink to a file outside the store is not followed."""
    outside = tmp_path / "outside.md"
    outside.write_bytes(render_memory(memory("zz-link", "Outside", f"`{tmp_path}/gone.sh` is gone.\n")))
    store = make_store(tmp_path / "store")
    add_all(store, [memory("real-note", "Real", "Nothing to check.\n")])
    (store.root / "memories" / "zz").mkdir()
    (store.root / "memories" / "zz" / "zz-link.md").symlink_to(outside)
    git(store.root, "add", "memories/zz/zz-link.md")
    git(store.root, "commit", "-q", "--no-verify", "-m", "a link")

    proc = quipu("--store", str(store.root), "verify", "--all", "--json", "--check-any-path")

    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert [r["id"] for r in summary["memories_checked"]] == ["real-note"] and summary["extracted"] == 0
    assert labels(store) == {}
