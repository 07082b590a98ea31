"""Settings, split by who may choose them: the user's own configuration, or a (shared) store.

A store is someone else's input as soon as it is shared through git, so its committed
``quipu.toml`` may only tune ranking inside hard bounds and lower the output caps. Contract:
- ``USER_ONLY`` settings (what runs, where files go, how much is sent to a model) are read from
  ``$QUIPU_HOME/config.toml``, the environment or a flag, never from a store; a store that sets
  one is ignored for it, and ``problems`` names the setting and where it belongs.
- ``CAPPED`` settings (how much reaches the model's context) take the store's value only up to
  quipu's default; the user's config may raise them up to a hard bound (``ceiling``), which no
  setting passes. ``BOUNDED`` settings (ranking knobs) may come from either, clamped into bounds.
- ``section(store, name)`` is the effective table for a section; ``problems(store)`` lists
  every refused or clamped store setting, one line each, for ``quipu doctor``.
"""
from __future__ import annotations

import os

from quipu.prompt import locate
from quipu.lite import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeGuard

USER_CONFIG = "config.toml"
MODEL_ENV = "QUIPU_MODEL"


class Cap(NamedTuple):
    default: float
    ceiling: float  # nothing raises it past this
    floor: float = 0


# Settings that choose what runs, where files go, or how much goes to a model.
USER_ONLY: dict[str, tuple[str, ...]] = {
    "sweep": ("model", "max_calls", "max_chars", "use_api_key", "enrich"),
    "verify": ("roots", "paths"),
}
# How much reaches the model's context: a store may lower these, only the user may raise them.
CAPPED: dict[str, dict[str, Cap]] = {
    # Claude Code cuts hook context at 10,000 characters; inject.HARD_MAX_CHARS is the same bound.
    "recall": {"limit": Cap(2, 5), "max_chars": Cap(1500, 9000)},
    "profile": {"max_lines": Cap(14, 40, 1), "max_chars": Cap(1375, 4000, 1), "entry_chars": Cap(140, 400, 1)},
}
# Ranking knobs: either source, clamped into bounds.
BOUNDED: dict[str, dict[str, tuple[float, float]]] = {"recall": {"min_score": (0.0, 50.0)}}


def user_config_path() -> str:
    return os.path.join(locate.quipu_home(), USER_CONFIG)


def _read(path: str, *, follow: bool) -> tuple[dict[str, Any], str]:
    """The TOML at ``path`` and '', or {} and why it could not be used ('' when it is absent)."""
    try:
        fd = os.open(path, os.O_RDONLY | (0 if follow else os.O_NOFOLLOW))
    except FileNotFoundError:
        return {}, ""
    except OSError as exc:
        return {}, f"cannot be read ({exc.strerror}; a symlink is never followed)"
    import tomllib  # loaded when a settings file is there to read

    try:
        with os.fdopen(fd, "rb") as fh:
            return tomllib.load(fh), ""
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return {}, f"is not valid TOML ({exc})"


def files_stamp(root: os.PathLike[str] | str) -> str:
    """What changes whenever the store's ``quipu.toml`` or the user's config file is edited,
    replaced or removed (each file's inode, size and mtime), to know a reading of them still holds."""
    parts = []
    for path, stat in ((os.path.join(os.fspath(root), "quipu.toml"), os.lstat), (user_config_path(), os.stat)):
        try:
            st = stat(path)
            parts.append(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "|".join(parts)


def _load(path: str, *, follow: bool) -> dict[str, Any]:
    return _read(path, follow=follow)[0]


def user_config() -> dict[str, Any]:
    return _load(user_config_path(), follow=True)  # yours: a dotfiles symlink is fine


def store_config(root: os.PathLike[str] | str) -> dict[str, Any]:
    return _load(os.path.join(os.fspath(root), "quipu.toml"), follow=False)  # a store's symlink is not read


def _table(config: dict[str, Any], name: str) -> dict[str, Any]:
    value = config.get(name, {})
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def user_setting(section_name: str, key: str) -> Any:
    """A USER_ONLY setting from ``$QUIPU_HOME/config.toml`` (None when unset)."""
    return _table(user_config(), section_name).get(key)


def section(store: Any, name: str) -> dict[str, Any]:
    """The effective ``[name]`` table: store values within their bounds, the user's above them."""
    theirs = _table(store_config(store.root), name)
    mine = _table(user_config(), name)
    out: dict[str, Any] = {}
    for key, cap in CAPPED.get(name, {}).items():
        kind = type(cap.default)
        value: float | None = None
        if _number(mine.get(key)):
            value = min(max(mine[key], cap.floor), cap.ceiling)
        elif _number(theirs.get(key)):
            value = min(max(theirs[key], cap.floor), cap.default)
        if value is not None:
            out[key] = kind(value)
    for key, (low, high) in BOUNDED.get(name, {}).items():
        for source in (mine, theirs):
            if _number(source.get(key)):
                out[key] = float(min(max(source[key], low), high))
                break
    return out


def problems(store: Any) -> list[str]:
    """Each store setting quipu refuses or clamps, with where the setting belongs instead."""
    where = f"{store.root}/quipu.toml"
    config, why = _read(where, follow=False)
    home = user_config_path()
    out: list[str] = []
    if why:
        out.append(f"{where} {why}: every store setting is ignored\n- fix the file and commit it")
    for name, keys in USER_ONLY.items():
        table = _table(config, name)
        for key in keys:
            if key in table:
                also = f", the {MODEL_ENV} environment variable or --model" if key == "model" else (
                    " or --root NAME=PATH" if key == "roots" else " or --check-any-path" if key == "paths"
                    else " or --no-enrich" if key == "enrich"
                    else "" if key == "use_api_key" else f" or --{key.replace('_', '-')}")
                out.append(f"[{name}] {key} in {where} is ignored: a store may not choose what runs, where files go "
                           f"or how much is sent to a model\n- set it in {home} [{name}]{also}")
    for name, caps in CAPPED.items():
        table = _table(config, name)
        for key, cap in caps.items():
            value = table.get(key)
            if _number(value) and not cap.floor <= value <= cap.default:
                out.append(f"[{name}] {key} = {value} in {where} is clamped to {type(cap.default)(min(max(value, cap.floor), cap.default))}: "
                           f"a store may only lower it from the default\n- to raise it (up to {cap.ceiling:g}) set it in {home} [{name}]")
    for name, bounds in BOUNDED.items():
        table = _table(config, name)
        for key, (low, high) in bounds.items():
            value = table.get(key)
            if _number(value) and not low <= value <= high:
                out.append(f"[{name}] {key} = {value} in {where} is clamped into [{low:g}, {high:g}]\n"
                           f"- use a value inside those bounds")
    return out
