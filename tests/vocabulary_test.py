"""The generated vocabulary and lexicon match what scripts/build_vocabulary.py derives."""
from __future__ import annotations

import subprocess
import sys

import pytest

from quipu.prompt import query
from testing import realistic as R
from testing.fixtures import REPO_ROOT


@pytest.mark.skipif(R.data_dir() is None, reason=R.MISSING_DATA)
def test_the_generated_vocabulary_is_up_to_date() -> None:
    pytest.importorskip("stop_words", reason="the stop-words package comes with the test extras")
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "build_vocabulary.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_everyday_words_inflections_and_other_languages_are_generic() -> None:
    for word in ("fix", "fixes", "fixing", "tasks", "pending", "remaining", "changes", "moving", "failure",
                 "committed", "merci", "weiter", "gracias", "obrigado", "ça", "vs", "412"):
        assert query.is_generic(word), word


def test_stack_specific_words_stay_topics() -> None:
    for word in ("postgres", "kubernetes", "django", "celery", "gunicorn", "pgbouncer", "nginx", "terraform"):
        assert not query.is_generic(word), word


def test_the_lexicon_ships_in_the_package_with_its_notice() -> None:
    text = (REPO_ROOT / "quipu" / "data" / "lexicon.txt").read_text(encoding="utf-8")
    assert "Kevin Atkinson" in text and "permission notice" in text
    stems = {line for line in text.splitlines() if line and not line.startswith("#")}
    assert {"deploy", "databas", "config"} <= stems
    assert not {"imgcolorshin", "pgbouncer", "kubernet"} & stems
