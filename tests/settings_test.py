"""Who may choose which setting: a store only lowers caps and tunes ranking; the user may raise
caps up to hard bounds and alone chooses the model, budgets and paths (docs/security.md)."""
from __future__ import annotations

import os
from pathlib import Path

from quipu.store import settings
from quipu.store.store import Store
from testing.fixtures import make_store


def _configure(store: Store, store_text: str, user_text: str = "") -> None:
    (store.root / "quipu.toml").write_text(store_text)
    home = Path(os.environ["QUIPU_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(user_text)


def test_a_store_may_lower_the_caps_but_not_raise_them(store_path: Path) -> None:
    store = make_store(store_path)
    _configure(store, "[recall]\nlimit = 1\nmax_chars = 50000\nmin_score = 99\n[profile]\nmax_lines = 3\n")
    assert settings.section(store, "recall") == {"limit": 1, "max_chars": 1500, "min_score": 50.0}
    assert settings.section(store, "profile") == {"max_lines": 3}
    found = settings.problems(store)
    assert len(found) == 2 and "[recall] max_chars = 50000" in found[0] and "min_score" in found[1]


def test_the_user_may_raise_the_caps_up_to_their_hard_bounds(store_path: Path) -> None:
    store = make_store(store_path)
    _configure(store, "[recall]\nlimit = 1\n", "[recall]\nlimit = 4\nmax_chars = 20000\n[profile]\nmax_lines = 20\n")
    assert settings.section(store, "recall") == {"limit": 4, "max_chars": 9000}
    assert settings.section(store, "profile") == {"max_lines": 20}
    assert settings.problems(store) == []


def test_what_runs_comes_from_the_user_never_the_store(store_path: Path) -> None:
    store = make_store(store_path)
    _configure(store, '[sweep]\nmodel = "command:sh -c evil"\n', '[sweep]\nmodel = "claude:sonnet"\n')
    assert settings.user_setting("sweep", "model") == "claude:sonnet"
    assert any("[sweep] model" in line and "ignored" in line for line in settings.problems(store))


def test_a_symlinked_store_config_is_not_read_but_a_symlinked_user_config_is(store_path: Path, tmp_path: Path) -> None:
    store = make_store(store_path)
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text("[recall]\nlimit = 1\n")
    (store.root / "quipu.toml").unlink()
    (store.root / "quipu.toml").symlink_to(elsewhere)
    assert settings.store_config(store.root) == {}
    home = Path(os.environ["QUIPU_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").symlink_to(elsewhere)
    assert settings.user_config() == {"recall": {"limit": 1}}
