"""Facts that update themselves: current value on top, dated history below, one commit per change."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
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


def fact(store_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return quipu("--store", str(store_path), "fact", *args)


def shown_values(store_path: Path, subject: str) -> list[str]:
    shown = fact(store_path, "show", subject, "--json")
    assert shown.returncode == 0, shown.stderr
    return [v["value"] for v in json.loads(shown.stdout)["values"]]


def test_setting_an_earlier_value_again_makes_it_current_again(store_path: Path) -> None:
    store = make_store(store_path)
    for value in ("staging", "production"):
        assert fact(store_path, "set", "deploy target", value).returncode == 0

    again = fact(store_path, "set", "deploy target", "staging")

    assert again.returncode == 0, again.stderr
    assert "nothing changed" not in again.stdout and "deploy target: staging (since" in again.stdout
    assert shown_values(store_path, "deploy target") == ["staging", "production", "staging"]
    head = store.head()
    same = fact(store_path, "set", "deploy target", "Staging")  # only the current value is "nothing changed"
    assert "already staging" in same.stdout and "nothing changed" in same.stdout and store.head() == head


def test_a_value_already_recorded_from_that_day_changes_nothing_and_the_message_names_it(store_path: Path) -> None:
    store = make_store(store_path)
    facts.set_fact(store, SUBJECT, "Acme Robotics", since="2021-03-01")
    facts.set_fact(store, SUBJECT, "Initech", since="2023-06-15")
    head = store.head()

    repeated = fact(store_path, "set", SUBJECT, "acme robotics", "--since", "2022-01-01")

    assert repeated.returncode == 0, repeated.stderr
    assert store.head() == head
    assert "Acme Robotics already held from 2021-03-01; nothing changed" in repeated.stdout
    assert "current: Initech (since 2023-06-15)" in repeated.stdout
    assert "already Initech" not in repeated.stdout


def test_values_set_on_one_day_keep_the_order_they_were_set_in(store_path: Path) -> None:
    store = make_store(store_path)
    for value in ("a1", "a2", "a3", "a4", "a5"):
        assert fact(store_path, "set", "order test", value).returncode == 0

    assert shown_values(store_path, "order test") == ["a5", "a4", "a3", "a2", "a1"]
    day = facts.today()
    assert store.get(facts.fact_id("order test")).body.splitlines() == [
        f"Current: a5 (since {day})", "", "Earlier values:",
        *(f"- {v} ({day} to {day})" for v in ("a4", "a3", "a2", "a1"))]
    assert fact(store_path, "set", "order test", "a3").returncode == 0
    assert fact(store_path, "set", "order test", "a6").returncode == 0
    assert shown_values(store_path, "order test") == ["a6", "a3", "a5", "a4", "a3", "a2", "a1"]


@pytest.mark.parametrize("first, second", [("C++ standard", "C standard"), ("C# standard", "C standard"),
                                           ("Maria's employer", "maria s employer")])
def test_subjects_that_differ_only_in_punctuation_keep_notes_of_their_own(
    store_path: Path, first: str, second: str,
) -> None:
    make_store(store_path)
    assert facts.fact_id(first) == facts.fact_id(second)  # the slug alone would put both in one note
    assert fact(store_path, "set", first, "value one").returncode == 0

    made = fact(store_path, "set", second, "value two")

    assert made.returncode == 0, made.stderr
    assert "before:" not in made.stdout
    assert shown_values(store_path, first) == ["value one"]
    assert shown_values(store_path, second) == ["value two"]
    shown = fact(store_path, "show", first.upper().replace(" ", "   "))  # case and spacing name the same subject
    assert shown.stdout.startswith(f"{first}: value one") and "value two" not in shown.stdout
    assert fact(store_path, "set", second, "value three").returncode == 0
    assert shown_values(store_path, second) == ["value three", "value two"]
    assert shown_values(store_path, first) == ["value one"]


def test_a_subject_s_note_under_the_hashed_id_is_found_updated_and_undone_by_its_subject(store_path: Path) -> None:
    store = make_store(store_path)
    made = facts.set_fact(store, "C standard", "C11")
    other = facts.set_fact(store, "C++ standard", "C++20", since="2020-12-01")
    assert made.id == facts.fact_id("C standard") and other.id == facts.fact_ids("C++ standard")[1] != made.id

    update = facts.set_fact(store, "c++  Standard", "C++23")
    assert update.id == other.id and [v.value for v in update.earlier] == ["C++20"]
    store.undo(memory=other.id)

    assert [v.value for v in facts.get_fact(store, "C++ standard")[1]] == ["C++20"]
    assert [v.value for v in facts.get_fact(store, "C standard")[1]] == ["C11"]
    assert [e.action for e in store.log(memory=made.id)] == ["fact-set"]


def test_a_note_two_subjects_shared_before_answers_only_the_subject_its_title_names(store_path: Path) -> None:
    store = make_store(store_path)
    shared = "Current: C11 (since 2025-02-01)\n\nEarlier values:\n- C++20 (2025-01-01 to 2025-02-01)\n"
    add_all(store, [memory(facts.fact_id("C standard"), "C standard: C11", shared, cls="fact",
                           entities=["C++ standard", "C standard"])])

    assert shown_values(store_path, "C standard") == ["C11", "C++20"]
    wrong = fact(store_path, "show", "C++ standard")
    assert wrong.returncode == 1 and "another subject" in wrong.stderr
    assert fact(store_path, "set", "C++ standard", "C++23").returncode == 0
    assert shown_values(store_path, "C++ standard") == ["C++23"]
    assert shown_values(store_path, "C standard") == ["C11", "C++20"]


def test_a_fact_whose_title_was_edited_by_hand_is_found_by_its_entities(store_path: Path) -> None:
    store = make_store(store_path)
    for n, title in enumerate(("Where Maria works", "Maria (my sister)'s employer: Initech")):
        store.add(memory(facts.fact_id(SUBJECT), title, "Current: Initech (since 2023-06-15)\n", cls="fact",
                         entities=[SUBJECT]), overwrite=n > 0)

        assert facts.get_fact(store, SUBJECT)[0].title == title
    change = facts.set_fact(store, SUBJECT, "Globex Logistics", since="2024-09-02")

    assert change.id == facts.fact_id(SUBJECT) and [v.value for v in change.earlier] == ["Initech"]


def test_a_since_after_today_is_a_usage_error_that_says_how_to_fix_it(store_path: Path) -> None:
    store = make_store(store_path)
    head = store.head()

    refused = fact(store_path, "set", "x", "y", "--since", "2099-01-01")

    assert refused.returncode == 2
    assert "2099-01-01 is after today" in refused.stderr and "leave --since out for today" in refused.stderr
    assert store.head() == head
    with pytest.raises(InvalidMemory, match="after today"):
        facts.set_fact(store, "x", "y", since="2099-01-01")
    tomorrow = (dt.date.fromisoformat(facts.today()) + dt.timedelta(days=1)).isoformat()
    assert fact(store_path, "set", "x", "y", "--since", tomorrow).returncode == 0  # a time zone ahead


def test_a_value_set_today_becomes_current_over_a_stored_value_dated_after_today(store_path: Path) -> None:
    store = make_store(store_path)
    add_all(store, [memory(facts.fact_id("x"), "x: y", "Current: y (since 2099-01-01)\n", cls="fact",
                           entities=["x"])])

    later = fact(store_path, "set", "x", "z")

    assert later.returncode == 0, later.stderr
    assert f"x: z (since {facts.today()})" in later.stdout
    assert "y was dated 2099-01-01, after today" in later.stdout
    assert shown_values(store_path, "x") == ["z", "y"]
    assert fact(store_path, "set", "x", "w").returncode == 0
    assert shown_values(store_path, "x") == ["w", "z", "y"]
