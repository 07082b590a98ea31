"""A project's store and the per-user store, read together: recall, search, MCP and the session card."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from quipu.capture import profile
from quipu.curate import review
from quipu.prompt import hook
from quipu.store.store import Store
from testing import realistic as R
from testing.fixtures import add_all, example_memories, make_store, memory, quipu, run_prompt_hook

USER_PROMPT = "how do we rotate the kestrel signing keys?"
PROJECT_PROMPT = "where does the orbital ledger reconcile payments?"
DATA = R.data_dir()
SETS = Path(__file__).parent / "fixtures" / "recall"


class Layers:
    def __init__(self, project: Path, user: Store, inner: Store) -> None:
        self.project = project  # the project's folder; its store is project/.quipu
        self.user = user
        self.inner = inner


def user_root() -> Path:
    return Path(os.environ["QUIPU_HOME"]) / "store"


@pytest.fixture
def layers(tmp_path: Path) -> Layers:
    user = make_store(user_root())
    lines = f"- {profile.PREFIXES[0]}: Writes commit messages in the imperative mood"
    user.commit({profile.PROFILE_PATH: f"# Profile\n\n{lines}\n".encode()}, "hand edit",
                {"Quipu-Action": "edit", "Quipu-Memory": "profile"})
    add_all(user, [
        memory("kestrel-keys", "Kestrel signing keys rotation",
               "The kestrel signing keys are rotated every quarter with the vault rotate job."),
        memory("user-rule", "Answers stay short", "Keep answers short and plain.", cls="rule", always_on=True,
               description="The user wants short, plain answers"),
    ])
    project = tmp_path / "proj"
    inner = make_store(project / ".quipu")
    add_all(inner, [
        memory("orbital-ledger", "Orbital ledger reconciliation",
               "The orbital ledger reconciles payments nightly in the settlement worker."),
        memory("project-rule", "Migrations need a review", "Every schema migration gets a second review.",
               cls="rule", always_on=True, description="Schema migrations need a second reviewer"),
    ])
    (project / "src").mkdir()
    return Layers(project, user, inner)


def prompt_event(prompt: str, cwd: Path, session: str) -> str:
    return json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(cwd),
                       "transcript_path": "", "prompt": prompt})


def injected(prompt: str, cwd: Path, session: str, **env: str) -> str:
    proc = run_prompt_hook(prompt_event(prompt, cwd, session), env=env)
    assert proc.returncode == 0 and proc.stderr == b""
    if not proc.stdout:
        return ""
    return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])


def test_the_hook_recalls_a_user_memory_inside_a_project_and_names_each_store(layers: Layers) -> None:
    text = injected(USER_PROMPT, layers.project / "src", "s-user")
    assert "id kestrel-keys" in text and "store: user" in text
    text = injected(PROJECT_PROMPT, layers.project / "src", "s-project")
    assert "id orbital-ledger" in text and "store: project" in text and "store: user" not in text
    # each store keeps its own session: the same prompt in the same session says nothing more
    assert injected(USER_PROMPT, layers.project / "src", "s-user") == ""
    # a store with no index yet says nothing (a refresh starts); the other still answers, labelled
    (layers.user.root / ".cache" / "index.sqlite").unlink()
    text = injected(PROJECT_PROMPT, layers.project, "s-no-index")
    assert "id orbital-ledger" in text and "store: project" in text


def test_at_most_two_memories_are_injected_from_both_stores(layers: Layers) -> None:
    add_all(layers.user, [memory(f"kestrel-{n}", f"Kestrel signing keys note {n}",
                                 f"The kestrel signing keys rotation, note {n}.") for n in range(3)])
    add_all(layers.inner, [memory(f"inner-kestrel-{n}", f"Kestrel signing keys in the project {n}",
                                  f"The project's kestrel signing keys rotation, note {n}.") for n in range(3)])
    text = injected(USER_PROMPT, layers.project, "s-limit")
    assert text.count("(id ") == 2


def test_the_store_pinned_by_store_or_quipu_store_is_read_alone(layers: Layers) -> None:
    pinned = str(layers.project / ".quipu")
    assert injected(USER_PROMPT, layers.project, "s-pinned", QUIPU_STORE=pinned) == ""
    text = injected(PROJECT_PROMPT, layers.project, "s-pinned2", QUIPU_STORE=pinned)
    assert "id orbital-ledger" in text and "store:" not in text
    out = quipu("--store", pinned, "recall", USER_PROMPT, "--json", cwd=layers.project)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hits"] == []
    out = quipu("--store", pinned, "search", "kestrel orbital", "--json", "--words-only", cwd=layers.project)
    found = json.loads(out.stdout)
    assert [h["id"] for h in found] == ["orbital-ledger"] and "store" not in found[0]


def test_recall_and_search_read_both_stores_and_name_each_hit_s_store(layers: Layers) -> None:
    out = quipu("recall", USER_PROMPT, "--json", cwd=layers.project / "src")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert [(h["id"], h["store"]) for h in result["hits"]] == [("kestrel-keys", "user")]
    assert "store: user" in result["context"]
    text = quipu("recall", USER_PROMPT, "--explain", cwd=layers.project).stdout
    assert "kestrel-keys (user store)" in text
    out = quipu("search", "kestrel orbital", "--json", "--words-only", cwd=layers.project / "src")
    assert out.returncode == 0, out.stderr
    assert {(h["id"], h["store"]) for h in json.loads(out.stdout)} == {("kestrel-keys", "user"),
                                                                      ("orbital-ledger", "project")}
    assert "store: user" in quipu("search", "kestrel", "--words-only", cwd=layers.project).stdout
    shown = quipu("show", "kestrel-keys", "--json", cwd=layers.project)  # the id a hit named opens
    assert shown.returncode == 0 and "quarter" in json.loads(shown.stdout)["body"]
    missing = quipu("show", "no-such-memory", cwd=layers.project)
    assert missing.returncode != 0 and "no-such-memory" in missing.stderr


def test_writes_go_to_the_project_store(layers: Layers) -> None:
    out = quipu("add", "--title", "Settlement worker runs at two", "The settlement worker runs at 02:00.",
                cwd=layers.project / "src")
    assert out.returncode == 0, out.stderr
    assert "Settlement worker" in quipu("list", "--store", str(layers.project / ".quipu")).stdout
    assert "Settlement worker" not in quipu("list", "--store", str(layers.user.root)).stdout


def test_the_session_card_in_a_project_shows_the_user_profile_and_both_stores_rules(layers: Layers) -> None:
    event = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "cwd": str(layers.project / "src")})
    out = quipu("session-start", "--hook", input=event, cwd=layers.project / "src")
    assert out.returncode == 0, out.stderr
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "imperative mood" in text
    assert text.index("id project-rule") < text.index("id user-rule")
    pinned = quipu("--store", str(layers.project / ".quipu"), "session-start", "--json", cwd=layers.project)
    layer = json.loads(pinned.stdout)
    assert layer["rules"] == ["project-rule"] and layer["profile_lines"] == []


def test_mcp_search_and_get_read_both_stores(layers: Layers) -> None:
    from mcp_server_test import LAUNCHER, call

    from mcp import StdioServerParameters
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CODE_SESSION_ID", "QUIPU_STORE")}
    params = StdioServerParameters(command=sys.executable, args=["-I", str(LAUNCHER)], env=env,
                                   cwd=str(layers.project / "src"))
    (err1, found), (err2, shown), (err3, own) = call(
        params, ("search_memory", {"query": "kestrel signing keys"}), ("get_memory", {"id": "kestrel-keys"}),
        ("get_memory", {"id": "orbital-ledger"}))
    assert not (err1 or err2 or err3)
    assert "id kestrel-keys" in found and "store: user" in found
    assert "quarter" in shown and "nightly" in own

    # a proposal goes to the store that holds both memories; none across two stores
    add_all(layers.user, [memory("kestrel-keys-2027", "Kestrel keys rotate monthly",
                                 "Since 2027 the kestrel signing keys rotate every month.")])
    (err1, queued), (err2, across), (err3, unknown) = call(
        params,
        ("propose_supersession", {"old_id": "kestrel-keys", "new_id": "kestrel-keys-2027", "reason": "monthly now"}),
        ("propose_supersession", {"old_id": "orbital-ledger", "new_id": "kestrel-keys-2027", "reason": "newer"}),
        ("propose_supersession", {"old_id": "nothing-here", "new_id": "kestrel-keys", "reason": "newer"}))
    assert not err1 and f"quipu --store {layers.user.root} review accept rv-" in queued, queued
    [item] = review.items(layers.user)
    assert (item.memory, item.other) == ("kestrel-keys", "kestrel-keys-2027") and review.items(layers.inner) == []
    assert err2 and "orbital-ledger is in the project store and kestrel-keys-2027 in the user store" in across
    assert err3 and "no memory 'nothing-here'" in unknown

    # remember writes to the project's store, but not a claim either store already holds
    head = layers.inner.head()
    (err1, again_user), (err2, again_project), (err3, kept) = call(
        params,
        ("remember", {"title": "Kestrel signing keys rotation", "class": "reference",
                      "body": "The kestrel signing keys are rotated every quarter with the vault rotate job."}),
        ("remember", {"title": "Orbital ledger reconciliation", "class": "project-note",
                      "body": "The orbital ledger reconciles payments nightly in the settlement worker."}),
        ("remember", {"title": "Settlement worker host", "class": "reference",
                      "body": "The settlement worker runs on the batch-7 host."}))
    assert err1 and "near-identical memory exists in the user store (kestrel-keys" in again_user, again_user
    assert err2 and "near-identical memory exists in the project store (orbital-ledger" in again_project
    assert not err3 and kept.startswith("Remembered ") and layers.inner.head() != head


@pytest.mark.skipif(DATA is None, reason="the realistic data (../shared/data) is absent")
def test_the_conversational_sets_inject_nothing_with_two_stores(tmp_path: Path) -> None:
    assert DATA is not None
    home = tmp_path / "qh"
    R.realistic_store(home / "store", R.real_notes(DATA))
    project = tmp_path / "proj"
    add_all(make_store(project / ".quipu"), example_memories())
    env = {"QUIPU_HOME": str(home), "HOME": str(tmp_path)}
    cases = [(p["text"], "") for name in ("conversational.json", "conversational_dev.json")
             for p in json.loads((SETS / name).read_text(encoding="utf-8"))["prompts"]]
    cases += [(p.text, p.previous) for p in R.real_prompts(DATA, "conversational")]
    assert len(cases) > 300
    spoke = []
    for n, (text, previous) in enumerate(cases):
        event = hook.PromptEvent(f"s-{n}", "", str(project), text)
        event.context = previous  # the assistant's last words, as the transcript's tail gives them
        if hook.run(event, env):
            spoke.append(text)
    assert spoke == []
    # the same stores do answer a prompt with a topic; a memory both stores hold is shown once
    text = hook.run(hook.PromptEvent("s-t", "", str(project), "how do we deploy shop-api to production?"), env)
    assert text.count("id deploy-procedure") == 1
    again = hook.run(hook.PromptEvent("s-t", "", str(project), "how do we deploy shop-api to production?"), env)
    assert "id deploy-procedure" not in again  # nor its copy from the other store, in the same session


def test_quipu_add_in_a_project_refuses_a_claim_the_per_user_store_holds(layers: Layers) -> None:
    text = "The kestrel signing keys are rotated every quarter with the vault rotate job."
    refused = quipu("add", "--title", "Kestrel signing keys rotation", text, cwd=layers.project / "src")
    assert refused.returncode == 1 and "the per-user store holds a near-identical memory: kestrel-keys" in refused.stderr
    assert "pass --force" in refused.stderr
    head = layers.inner.head()
    forced = quipu("add", "--force", "--title", "Kestrel signing keys rotation", text, cwd=layers.project / "src")
    assert forced.returncode == 0, forced.stderr
    assert layers.inner.head() != head  # --force keeps a copy in the project's store
    other = quipu("add", "--title", "Ledger batch size", "The orbital ledger settles in batches of 500.",
                  cwd=layers.project / "src")
    assert other.returncode == 0, other.stderr


def test_two_memories_that_only_share_an_id_are_both_found_and_a_copy_once(layers: Layers) -> None:
    add_all(layers.inner, [memory("kestrel-keys", "Kestrel keys in this project",
                                  "This project's kestrel signing keys live in the orbital vault.")])
    out = quipu("search", "kestrel signing keys", "--json", "--words-only", cwd=layers.project / "src")
    assert out.returncode == 0, out.stderr
    found = [(h["id"], h["store"]) for h in json.loads(out.stdout)]
    assert ("kestrel-keys", "user") in found and ("kestrel-keys", "project") in found
    add_all(layers.user, [memory("orbital-ledger", "Orbital ledger reconciliation",  # the same memory, copied
                                 "The orbital ledger reconciles payments nightly in the settlement worker.")])
    out = quipu("search", "orbital ledger reconciliation", "--json", "--words-only", cwd=layers.project)
    assert [(h["id"], h["store"]) for h in json.loads(out.stdout)].count(("orbital-ledger", "project")) == 1
    assert [h["id"] for h in json.loads(out.stdout)].count("orbital-ledger") == 1


def test_a_store_is_never_made_inside_another_store(layers: Layers) -> None:
    inside = layers.user.root / "memories" / "zz" / "proj2" / ".quipu"
    made = quipu("init", str(inside))
    assert made.returncode == 1 and f"inside the quipu store {layers.user.root}" in made.stderr
    assert not inside.exists()
    assert quipu("init", str(layers.project / "sub" / ".quipu")).returncode == 0  # in a project, beside its store
