"""quipu.lite's stand-ins build what the standard library's names build."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from quipu import lite
from testing.fixtures import used_as_it_loads


def _pair(base: object) -> type:
    class Point(base):  # type: ignore[misc,valid-type]
        """A point."""

        x: int
        y: str = "a"
        z: tuple[int, ...] = ()

        def total(self) -> int:
            return self.x + len(self.y)

        @property
        def doubled(self) -> int:
            return 2 * self.x

    return Point


def test_named_tuple_builds_what_typing_builds() -> None:
    ours, theirs = _pair(lite.NamedTuple), _pair(typing.NamedTuple)
    assert ours.__mro__[1:] == theirs.__mro__[1:] == (tuple, object)
    for name in ("_fields", "_field_defaults", "__doc__", "__name__", "__qualname__", "__module__"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert list(ours.__annotations__) == list(theirs.__annotations__) == ["x", "y", "z"]
    a, b = ours(1), theirs(1)
    assert a == b == (1, "a", ())
    assert repr(a).replace("Point", "") == repr(b).replace("Point", "")
    assert a.total() == b.total() == 2 and a.doubled == b.doubled == 2
    assert a._replace(y="bcd")._asdict() == b._replace(y="bcd")._asdict() == {"x": 1, "y": "bcd", "z": ()}
    assert ours._make([3, "q", (1,)]) == theirs._make([3, "q", (1,)])
    assert hash(a) == hash(b)
    with pytest.raises(TypeError):
        ours()  # x has no default, as with typing


def test_named_tuple_refuses_what_typing_refuses() -> None:
    for base in (lite.NamedTuple, typing.NamedTuple):
        with pytest.raises(TypeError):
            class Bad(base):  # type: ignore[misc,valid-type]
                x: int = 0
                y: int
        with pytest.raises(AttributeError):
            class Clash(base):  # type: ignore[misc,valid-type]
                x: int

                def _asdict(self) -> dict[str, int]:
                    return {}
    with pytest.raises(TypeError):
        lite.NamedTuple("Point", [("x", int)])  # only the class syntax


def test_the_hashes_are_hashlibs() -> None:
    import hashlib

    for data in (b"", b"blob 3\x00abc", bytes(range(256)) * 40, b"x" * (lite.BUILTIN_SHA1_BYTES + 1)):
        assert lite.sha1(data).digest() == hashlib.sha1(data).digest()
        assert lite.sha1(data).hexdigest() == hashlib.sha1(data).hexdigest()
        assert lite.blake2b(data, digest_size=20).digest() == hashlib.blake2b(data, digest_size=20).digest()


def test_short_data_is_hashed_without_loading_openssl() -> None:
    program = ("import sys\nfrom quipu import lite\nlite.sha1(b'x' * 1000).digest()\n"
               "lite.blake2b(b'x', digest_size=20).digest()\nprint('_hashlib' in sys.modules)\n"
               "lite.sha1(b'x' * (lite.BUILTIN_SHA1_BYTES + 1)).digest()\nprint('_hashlib' in sys.modules)\n")
    ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["False", "True"]  # long data: OpenSSL, faster per byte


# A parser whose help and errors use argparse's messages (gettext and ngettext), and a path's URI
# (pathlib's one use of urllib.parse), printed with the stand-ins in place or without them.
_STDLIB_PROGRAM = """
import sys
LIGHT = sys.argv[1] == "light"
if LIGHT:
    from quipu import lite
    lite.import_light_stdlib()
import argparse, pathlib
loaded = sorted(m for m in ("gettext", "locale", "urllib.parse", "ipaddress", "ntpath", "fnmatch") if m in sys.modules)
if sys.argv[2:]:
    import gettext
    gettext.bindtextdomain("messages", sys.argv[2])
class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)
parser = Parser(prog="demo")
parser.add_argument("--pair", nargs=2, help="two values")
sub = parser.add_subparsers(dest="cmd", required=True)
sub.add_parser("go", help="go somewhere").add_argument("where")
print(parser.format_help())
for argv in (["--pair", "a"], [], ["go"], ["stay"]):
    try:
        parser.parse_args(argv)
    except ValueError as exc:
        print(exc)
print(pathlib.Path("/tmp/a b/\\u00fc%#.md").as_uri())
print(pathlib.PureWindowsPath("C:/a/b.md").as_posix(), pathlib.PureWindowsPath("C:/a/B.MD").match("*.md"),
      pathlib.PurePosixPath("x/y/z.md").match("y/*.md"), pathlib.PurePosixPath("x/Z.md").match("*.md"))
import gettext, urllib.parse
print(loaded if LIGHT else "-", callable(gettext.GNUTranslations), urllib.parse.urlsplit("http://h/p").path)
"""


def _run_stdlib_program(mode: str, *extra: str, env: dict[str, str] | None = None) -> str:
    ran = subprocess.run([sys.executable, "-c", _STDLIB_PROGRAM, mode, *extra], capture_output=True, text=True,
                         check=True, env=env)
    return ran.stdout


def test_argparse_and_pathlib_beside_the_stand_ins_say_what_they_say_without_them() -> None:
    light, plain = _run_stdlib_program("light"), _run_stdlib_program("plain")
    unavoidable = sorted(used_as_it_loads("pathlib", ("urllib.parse", "ntpath", "fnmatch")))
    assert light.rsplit("\n", 2)[-2] == f"{unavoidable} True /p"  # none loaded; later imports get the real ones
    assert light.rsplit("\n", 2)[0] == plain.rsplit("\n", 2)[0]
    assert "usage: demo" in light and "expected 2 arguments" in light and "%C3%BC%25%23.md" in light


def _mo_file(path: Path, messages: dict[str, str]) -> None:
    """A GNU message catalog (the .mo format gettext reads), without msgfmt."""
    keys = sorted(messages)
    ids = b"".join(k.encode() + b"\0" for k in keys)
    strs = b"".join(messages[k].encode() + b"\0" for k in keys)
    start = 7 * 4 + 16 * len(keys)
    table_ids, table_strs, at = [], [], 0
    for k in keys:
        table_ids += [len(k.encode()), start + at]
        at += len(k.encode()) + 1
    at = 0
    for k in keys:
        table_strs += [len(messages[k].encode()), start + len(ids) + at]
        at += len(messages[k].encode()) + 1
    header = struct.pack("<7I", 0x950412DE, 0, len(keys), 28, 28 + 8 * len(keys), 0, 0)
    path.parent.mkdir(parents=True)
    path.write_bytes(header + struct.pack(f"<{4 * len(keys)}I", *table_ids, *table_strs) + ids + strs)


def test_argparse_beside_the_stand_in_translates_when_a_program_binds_a_catalog(tmp_path: Path) -> None:
    _mo_file(tmp_path / "xx" / "LC_MESSAGES" / "messages.mo", {
        "usage: ": "utilisation : ", "positional arguments": "arguments positionnels",
        "expected %s argument": "attendu %s argument", "expected %s arguments": "attendus %s arguments",
    })
    env = {**os.environ, "LANGUAGE": "xx"}
    light = _run_stdlib_program("light", str(tmp_path), env=env)
    plain = _run_stdlib_program("plain", str(tmp_path), env=env)
    assert "utilisation : demo" in light and "arguments positionnels" in light
    assert light.rsplit("\n", 2)[0] == plain.rsplit("\n", 2)[0]
