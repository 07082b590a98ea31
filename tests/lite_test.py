"""quipu.lite's stand-ins build what the standard library's names build."""
from __future__ import annotations

import subprocess
import sys
import typing

import pytest

from quipu import lite


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
