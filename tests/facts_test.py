"""Facts that update themselves: current value on top, dated history below, one commit per change."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from quipu.capture import facts
from quipu.index import index
from quipu.prompt import recall
from quipu.errors import FatalError, InvalidMemory
from quipu.store.store import Store
from testing.fixtures import add_all, make_store, memory, quipu

SUBJECT = "Maria's employer"


def employer_history(store: Store) -> None:
    facts.set_fact(store, SUBJECT, "Acme Robotics", since="2021-03-01")
    facts.set_fact(store, SUBJECT, "Initech", since="2023-06-15")
    facts.set_fact(store, SUBJECT, "Globex Logistics", since="2024-09-02")
    facts.set_fact(store, SUBJECT, "Umbrella Analytics", since="2026-01-05")


def hits(store: Store, prompt: str) -> list[str]:
    db = index.open_fresh(store)
    try:
        return [h.id for h in recall.recall(db, prompt).hits]
    finally:
        db.close()


def test_a_fact_updated_three_times_shows_the_current_value_first_and_every_earlier_value_dated(
    store_path: Path,
) -> None:
    store = make_store(store_path)
    employer_history(store)

    note = store.get(facts.fact_id(SUBJECT))

    assert note.title == "Maria's employer: Umbrella Analytics"
    assert note.description == "current value since 2026-01-05; 3 earlier values below"
    assert note.body.splitlines() == [
        "Current: Umbrella Analytics (since 2026-01-05)",
        "",
        "Earlier values:",
        "- Globex Logistics (2024-09-02 to 2026-01-05)",
        "- Initech (2023-06-15 to 2024-09-02)",
        "- Acme Robotics (2021-03-01 to 2023-06-15)",
    ]
    assert [e.action for e in store.log(memory=note.id)] == ["fact-set"] * 4  # one commit per change


def test_recall_of_an_old_values_wording_finds_the_fact_note_showing_the_current_value(store_path: Path) -> None:
    store = make_store(store_path)
    add_all(store, [memory("maria-onboarding", "Maria's onboarding checklist", "Maria gets access to the orders repo."),
                    memory("work-hours", "Core work hours", "The team works 10:00-16:00 Lisbon time.")])
    employer_history(store)

    found = hits(store, "did Maria ever work at Initech?")

    assert found[:1] == [facts.fact_id(SUBJECT)]
    db = index.open_fresh(store)
    try:
        hit = recall.recall(db, "did Maria ever work at Initech?").hits[0]
    finally:
        db.close()
    assert "Umbrella Analytics" in hit.title  # what it is now comes first


def test_setting_the_value_a_fact_already_has_changes_nothing(store_path: Path) -> None:
    store = make_store(store_path)
    first = facts.set_fact(store, SUBJECT, "Initech", since="2023-06-15")
    head = store.head()

    again = facts.set_fact(store, SUBJECT, "initech")

    assert first.commit is not None and again.commit is None and store.head() == head


def test_a_backdated_value_is_filed_into_the_history_where_its_date_puts_it(store_path: Path) -> None:
    store = make_store(store_path)
    facts.set_fact(store, SUBJECT, "Globex Logistics", since="2024-09-02")
    change = facts.set_fact(store, SUBJECT, "Acme Robotics", since="2021-03-01")

    assert change.current.value == "Globex Logistics"
    assert [v.value for v in change.earlier] == ["Acme Robotics"]


def test_undo_of_the_last_update_brings_the_previous_value_back(store_path: Path) -> None:
    store = make_store(store_path)
    facts.set_fact(store, SUBJECT, "Initech", since="2023-06-15")
    facts.set_fact(store, SUBJECT, "Globex Logistics", since="2024-09-02")

    store.undo(memory=facts.fact_id(SUBJECT))

    _note, history = facts.get_fact(store, SUBJECT)
    assert [v.value for v in history] == ["Initech"]


def test_fact_ids_are_stable_slugs_and_long_or_non_latin_subjects_stay_unique() -> None:
    assert facts.fact_id("Maria's  Employer") == facts.fact_id("maria's employer") == "fact-maria-s-employer"
    long_a = facts.fact_id("the " + "very " * 20 + "long subject A")
    long_b = facts.fact_id("the " + "very " * 20 + "long subject B")
    assert long_a != long_b and len(long_a) <= 64
    assert facts.fact_id("東京の住所") != facts.fact_id("大阪の住所")


def test_a_secret_never_becomes_a_fact_value(store_path: Path) -> None:
    store = make_store(store_path)
    with pytest.raises(FatalError, match="secret"):
        facts.set_fact(store, "staging API key", "sk-ant-api03-Q7vK2mXr9LpT4wZs8NbY3cHd6FjG1uAe5RqP0oIiMn")
    assert list(store.iter_memory_files()) == []


def test_a_fact_note_edited_into_another_shape_is_refused_with_the_format(store_path: Path) -> None:
    store = make_store(store_path)
    add_all(store, [memory(facts.fact_id(SUBJECT), "Maria's employer", "She works somewhere.", cls="fact")])
    with pytest.raises(InvalidMemory, match="Current: <value>"):
        facts.set_fact(store, SUBJECT, "Initech")


def test_a_bad_since_date_says_how_to_write_one(store_path: Path) -> None:
    with pytest.raises(InvalidMemory, match="YYYY-MM-DD"):
        facts.set_fact(make_store(store_path), SUBJECT, "Initech", since="June 2023")


def test_fact_set_and_show_commands(store_path: Path) -> None:
    make_store(store_path)
    for value, since in (("Acme Robotics", "2021-03-01"), ("Initech", "2023-06-15")):
        result = quipu("--store", str(store_path), "fact", "set", SUBJECT, value, "--since", since)
        assert result.returncode == 0, result.stderr
    assert "Initech (since 2023-06-15)" in result.stdout and "before: Acme Robotics" in result.stdout

    shown = quipu("--store", str(store_path), "fact", "show", SUBJECT, "--json")

    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["values"] == [
        {"value": "Initech", "since": "2023-06-15"}, {"value": "Acme Robotics", "since": "2021-03-01"}]
    missing = quipu("--store", str(store_path), "fact", "show", "nobody's employer")
    assert missing.returncode == 1 and "quipu list" in missing.stderr


def test_eight_terminals_setting_one_fact_at_once_lose_no_value(store_path: Path) -> None:
    """Each `quipu fact set` writes only over the version it read; one that lost the race reads the
    note again and files its value into the history the others wrote."""
    import os
    import subprocess
    import sys

    make_store(store_path)
    values = [(f"Employer {n}", f"2020-0{n + 1}-01") for n in range(8)]
    env = {**os.environ, "QUIPU_COMMAND_SERVER": "off"}
    procs = [subprocess.Popen([sys.executable, "-m", "quipu", "--store", str(store_path), "fact", "set", SUBJECT,
                               value, "--since", since], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for value, since in values]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    shown = json.loads(quipu("--store", str(store_path), "fact", "show", SUBJECT, "--json").stdout)
    assert shown["values"] == [{"value": value, "since": since} for value, since in reversed(values)]
