"""Decisions a person takes by hand: one that would change nothing writes nothing, and one that
would leave no current memory (a loop of supersessions) or contradict another command's state is
refused, with what to do instead. Through the real CLI, on a real store."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from testing.fixtures import quipu


def commits(store: Path) -> int:
    return int(subprocess.run(["git", "-C", str(store), "rev-list", "--count", "HEAD"], capture_output=True,
                              text=True, check=True).stdout)


def new_store(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    store = tmp_path / "store"
    env = {"QUIPU_STORE": str(store), "HOME": str(tmp_path / "home"), "QUIPU_COMMAND_SERVER": "off"}
    assert quipu("init", str(store), env=env).returncode == 0
    return store, env


def add(env: dict[str, str], memory_id: str, text: str) -> None:
    result = quipu("add", text, "--title", text[:40], "--id", memory_id, env=env)
    assert result.returncode == 0, result.stderr


def test_a_supersession_that_would_close_a_loop_is_refused(tmp_path: Path) -> None:
    store, env = new_store(tmp_path)
    for n, day in enumerate(("Tuesdays", "Thursdays", "Fridays")):
        add(env, f"rel-{n}", f"Releases are cut on {day}")
    assert quipu("supersede", "rel-0", "rel-1", env=env).returncode == 0
    assert quipu("supersede", "rel-1", "rel-2", env=env).returncode == 0
    before = commits(store)

    direct = quipu("supersede", "rel-1", "rel-0", env=env)
    through = quipu("supersede", "rel-2", "rel-0", env=env)

    assert direct.returncode == 1 and through.returncode == 1
    assert "rel-0 is itself superseded by rel-1" in direct.stderr and "nothing was written" in direct.stderr
    assert "(rel-0 by rel-1 by rel-2)" in through.stderr and "quipu undo --memory rel-0" in through.stderr
    assert commits(store) == before
    current = json.loads(quipu("list", "--status", "active", "--json", env=env).stdout)
    assert [m["id"] for m in current] == ["rel-2"]


def test_adding_a_memory_that_claims_to_replace_one_already_replaced_is_refused(tmp_path: Path) -> None:
    store, env = new_store(tmp_path)
    add(env, "kaf-1", "Kafka topics use 12 partitions")
    add(env, "kaf-2", "Kafka topics are compacted")
    assert quipu("supersede", "kaf-1", "kaf-2", env=env).returncode == 0
    before = commits(store)

    result = quipu("add", "Kafka default is now 24 partitions", "--title", "k3", "--id", "kaf-3",
                   "--supersedes", "kaf-1", env=env)

    assert result.returncode == 1
    assert "kaf-1 is already superseded by kaf-2; nothing was added" in result.stderr
    assert "quipu supersede kaf-1 kaf-3" in result.stderr and "--supersedes kaf-2" in result.stderr
    assert commits(store) == before
    add(env, "kaf-9", "Kafka brokers run on three nodes")
    assert quipu("supersede", "kaf-2", "kaf-9", env=env).returncode == 0
    chained = quipu("add", "Kafka default is 36 partitions", "--title", "k4", "--supersedes", "kaf-1", env=env)
    assert "kaf-1 is already superseded by kaf-2 (now by kaf-9)" in chained.stderr
    assert "--supersedes kaf-9" in chained.stderr and "quipu supersede kaf-1 NEW_ID" in chained.stderr
    assert quipu("add", "Kafka default is now 24 partitions", "--title", "k3", "--id", "kaf-3",
                 "--supersedes", "kaf-9", env=env).returncode == 0
    shown = json.loads(quipu("show", "kaf-9", "--json", env=env).stdout)
    assert shown["current_status"] == "superseded" and shown["superseded_by"] == "kaf-3"


def test_retracting_twice_and_clearing_an_absent_label_write_nothing(tmp_path: Path) -> None:
    store, env = new_store(tmp_path)
    add(env, "sen", "Sentry DSN is in vault kv/sentry")
    assert quipu("retract", "sen", env=env).returncode == 0
    assert quipu("label", "sen", "unverified", "--detail", "probe failed", env=env).returncode == 0
    before = commits(store)

    again = quipu("retract", "sen", env=env)
    same_label = quipu("label", "sen", "unverified", "--detail", "probe failed", "--json", env=env)
    absent = quipu("label", "sen", "nosuch", "--remove", env=env)

    assert again.returncode == 0 and "already retracted; nothing was written" in again.stdout
    assert json.loads(same_label.stdout)["already"] is True and json.loads(same_label.stdout)["commit"] is None
    assert absent.returncode == 0 and "sen does not have label nosuch; nothing was written" in absent.stdout
    assert commits(store) == before
    # one undo then takes the one retraction back, as it says
    assert quipu("undo", "--memory", "sen", env=env).returncode == 0
    assert quipu("undo", "--memory", "sen", env=env).returncode == 0
    assert json.loads(quipu("show", "sen", "--json", env=env).stdout)["current_status"] == "active"
    # a new detail is a new decision
    assert quipu("label", "sen", "unverified", "--detail", "probe failed twice", env=env).returncode == 0
    assert commits(store) == before + 3


def test_superseded_is_a_state_set_by_supersede_not_a_label(tmp_path: Path) -> None:
    store, env = new_store(tmp_path)
    add(env, "dep-new", "Deploy with scripts/train.sh")
    before = commits(store)

    result = quipu("label", "dep-new", "superseded", env=env)

    assert result.returncode == 1 and "quipu supersede OLD NEW" in result.stderr
    for word in ("Superseded", "RETRACTED"):  # a state's word in another case is not a label either
        assert quipu("label", "dep-new", word, env=env).returncode == 1
    assert commits(store) == before
    missing = quipu("label", "nope", "unverified", "--remove", env=env)
    assert missing.returncode == 1 and "nope" in missing.stderr


def test_superseding_by_a_retracted_memory_is_refused(tmp_path: Path) -> None:
    store, env = new_store(tmp_path)
    add(env, "old-host", "The database host is db1.internal")
    add(env, "new-host", "The database host is db2.internal")
    assert quipu("retract", "new-host", env=env).returncode == 0
    before = commits(store)

    result = quipu("supersede", "old-host", "new-host", env=env)

    assert result.returncode == 1 and "new-host is retracted" in result.stderr
    assert "quipu undo --memory new-host" in result.stderr and commits(store) == before


def test_a_secret_in_a_reason_or_detail_is_recorded_redacted_the_person_is_told_and_once_is_enough(
        tmp_path: Path) -> None:
    store, env = new_store(tmp_path)
    add(env, "cache-1", "Caching uses redis")
    add(env, "cache-2", "Caching uses memcached")
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

    superseded = quipu("supersede", "cache-1", "cache-2", "--reason", f"token {secret} leaked in the old note", env=env)
    labelled = quipu("label", "cache-2", "unverified", "--detail", f"probe used {secret}", env=env)
    before = commits(store)
    again = quipu("label", "cache-2", "unverified", "--detail", f"probe used {secret}", env=env)

    for result in (superseded, labelled):
        assert result.returncode == 0 and "recorded with that part redacted" in result.stderr
    assert "nothing was written" in again.stdout and commits(store) == before
    history = subprocess.run(["git", "-C", str(store), "log", "-p"], capture_output=True, text=True).stdout
    assert secret not in history and "[REDACTED:" in history


def test_add_supersedes_is_a_decision_of_its_own_that_undo_takes_back(tmp_path: Path) -> None:
    store, env = new_store(tmp_path)
    add(env, "dep-old", "Deploy with make release")
    added = quipu("add", "Deploy with make ship", "--title", "deploy now", "--id", "dep-new", "--supersedes",
                  "dep-old", "--json", env=env)
    assert added.returncode == 0, added.stderr
    made = json.loads(added.stdout)
    [decision] = made["superseded"]
    assert decision["id"] == "dep-old" and decision["commit"] != made["commit"]
    assert "supersedes: []" in (store / "memories" / "de" / "dep-new.md").read_text()  # the decision is an event
    logged = quipu("log", "--memory", "dep-old", env=env).stdout
    assert decision["commit"][:12] in logged

    undone = quipu("undo", "--memory", "dep-old", env=env)

    assert undone.returncode == 0, undone.stderr
    shown = json.loads(quipu("show", "dep-old", "--json", env=env).stdout)
    assert shown["current_status"] == "active"
    assert json.loads(quipu("show", "dep-new", "--json", env=env).stdout)["current_status"] == "active"
    missing = quipu("add", "Deploy with make go", "--title", "t", "--supersedes", "nope-1", env=env)
    assert missing.returncode == 1 and "nope-1" in missing.stderr
    assert commits(store) == 5  # init, two adds, the decision and its undo: the refused add wrote nothing
