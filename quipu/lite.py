"""Stand-ins for standard-library names whose modules cost a short command more than they give it.

A ``quipu add`` is a fresh process that must stay within a small multiple of ``git commit``:
``typing`` alone is about 2 ms to import, and the modules every write loads need nothing from it
at run time but ``NamedTuple``'s class syntax.

Contract:
- ``NamedTuple`` builds, from a class body, exactly what ``typing.NamedTuple`` builds (a
  ``collections.namedtuple`` with the annotated fields in order, their defaults, the class's
  docstring, methods and properties, ``__annotations__`` as written), without importing
  ``typing``; only the class syntax, with no other base. ``tests/lite_test.py`` checks it against
  ``typing.NamedTuple``. The type checker sees ``typing.NamedTuple`` itself.
- ``sha1(data)`` and ``blake2b(data, digest_size=...)`` are ``hashlib``'s: the same digests.
  ``hashlib`` loads OpenSSL (about 2.5 ms for a fresh process); a write hashes a few small
  objects and git's index, so ``sha1`` uses the interpreter's own SHA-1 for data up to
  ``BUILTIN_SHA1_BYTES`` until OpenSSL is loaded anyway, and OpenSSL's (several times faster on
  long data) past it. ``blake2b`` is always the interpreter's own (``hashlib`` has no other).
- ``import_light_stdlib()`` imports ``argparse`` and ``pathlib`` (when not loaded yet) while two
  stand-ins answer for modules they import only for rare uses, then takes the stand-ins out of
  ``sys.modules`` so that every later import gets the real module: ``argparse`` sees a ``gettext``
  whose ``gettext``/``ngettext`` return the message as it is when no message catalog can exist
  (the interpreter's ``share/locale`` folder is missing and the real ``gettext``, which a program
  needs to bind another folder, is not loaded) and ask the real module otherwise; ``pathlib``
  sees a ``urllib.parse`` whose ``quote_from_bytes`` (for ``Path.as_uri``) imports the real one at
  its first call, and an ``ntpath`` and an ``fnmatch`` (for Windows paths and for ``match`` and
  ``glob``) that import the real module at the first name looked up in them. That spares a
  command ``gettext`` with ``locale`` (argparse looks a catalog up for each message),
  ``urllib.parse`` with ``ipaddress``, ``ntpath`` and ``fnmatch``, about 3.5 ms of a fresh process
  (Python 3.12's ``pathlib`` calls ``fnmatch`` as it loads: there ``fnmatch`` is not spared).
  Should either module want a name a stand-in lacks (another Python), it is imported as usual.
- ``import_deferring(name, modules)`` imports ``name`` while each of ``modules`` that is not loaded
  yet is such a stand-in (for a module that uses them only in some calls: the secret scanner
  decodes base64 only in texts that hold a candidate); ``from MODULE import NAME`` takes the real one.
"""
from __future__ import annotations

import collections
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import _Hash
    from typing import Any
    from typing import NamedTuple as NamedTuple

# Past this many bytes loading OpenSSL costs less than hashing with the interpreter's SHA-1 (git's
# index of about 3,000 memories, hashed twice by a write).
BUILTIN_SHA1_BYTES = 256 * 1024

try:
    from _blake2 import blake2b as blake2b  # what hashlib.blake2b is
    from _sha1 import sha1 as _builtin_sha1  # type: ignore[import-not-found]  # hashlib's own fallback, no stub
except ImportError:  # an interpreter built without them: hashlib's own
    from hashlib import blake2b as blake2b
    from hashlib import sha1 as _builtin_sha1


def _gettext(message: str) -> str:
    real = _real_gettext()
    return message if real is None else real.gettext(message)


def _ngettext(singular: str, plural: str, n: int) -> str:
    real = _real_gettext()
    if real is None:
        return singular if n == 1 else plural
    return real.ngettext(singular, plural, n)  # type: ignore[no-any-return]


def _real_gettext() -> Any:
    """The real ``gettext`` module when a catalog could translate a message, else None."""
    loaded = sys.modules.get("gettext")
    if loaded is not None and loaded is not _GETTEXT:
        return loaded  # a program that loaded it may have bound a catalog folder of its own
    import os

    if not os.path.isdir(os.path.join(sys.base_prefix, "share", "locale")):  # gettext's default folder
        return None
    if loaded is _GETTEXT:
        del sys.modules["gettext"]
    import gettext

    return gettext


def _quote_from_bytes(bs: bytes, safe: str = "/") -> str:
    from urllib.parse import quote_from_bytes

    return quote_from_bytes(bs, safe)


_GETTEXT = type(sys)("gettext")
_GETTEXT.gettext = _gettext  # type: ignore[attr-defined]
_GETTEXT.ngettext = _ngettext  # type: ignore[attr-defined]
_URLLIB_PARSE = type(sys)("urllib.parse")
_URLLIB_PARSE.quote_from_bytes = _quote_from_bytes  # type: ignore[attr-defined]


class _Deferred(type(sys)):  # type: ignore[misc]
    """A module that stands in for ``import NAME``: the first name looked up in it imports the real one."""

    def __getattr__(self, name: str) -> Any:
        real = sys.modules.get(self.__name__)
        if real is None or real is self:
            sys.modules.pop(self.__name__, None)
            real = __import__(self.__name__)
        return getattr(real, name)


def import_light_stdlib() -> None:
    """Import ``argparse`` and ``pathlib`` beside the stand-ins (see the module contract)."""
    _import_beside("argparse", {"gettext": _GETTEXT})
    _import_beside("pathlib", {"urllib.parse": _URLLIB_PARSE, "ntpath": _Deferred("ntpath"),
                               "fnmatch": _Deferred("fnmatch")})


def import_deferring(name: str, modules: tuple[str, ...]) -> None:
    """Import ``name`` with ``modules`` imported at their first use (see the module contract)."""
    _import_beside(name, {module: _Deferred(module) for module in modules})


def _import_beside(name: str, stand_ins: dict[str, Any]) -> None:
    if name in sys.modules:
        return
    placed = [key for key in stand_ins if key not in sys.modules]
    for key in placed:
        sys.modules[key] = stand_ins[key]
    try:
        __import__(name)
    except ImportError:  # it wants a name a stand-in lacks: the usual import, below
        sys.modules.pop(name, None)
    finally:
        for key in placed:
            if sys.modules.get(key) is stand_ins[key]:
                del sys.modules[key]
    __import__(name)


def sha1(data: bytes = b"") -> _Hash:
    """``hashlib.sha1(data)``, without loading OpenSSL for short data (see the module contract)."""
    if len(data) <= BUILTIN_SHA1_BYTES and "_hashlib" not in sys.modules:
        return _builtin_sha1(data)  # type: ignore[no-any-return]
    import hashlib

    return hashlib.sha1(data)


if not TYPE_CHECKING:
    # The names typing.NamedTuple refuses to overwrite, and those it does not copy.
    _PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                             "_make", "_replace", "_asdict", "_source"})
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _NamedTupleMeta(type):
        def __new__(mcs, typename, bases, ns):
            if bases != (_NamedTupleBase,):
                raise TypeError("can only inherit from NamedTuple")
            types = ns.get("__annotations__", {})
            default_names = []
            for name in types:
                if name in ns:
                    default_names.append(name)
                elif default_names:
                    raise TypeError(f"Non-default namedtuple field {name} cannot follow default field"
                                    f"{'s' if len(default_names) > 1 else ''} {', '.join(default_names)}")
            made = collections.namedtuple(typename, list(types), defaults=[ns[n] for n in default_names],
                                          module=ns["__module__"])
            made.__annotations__ = made.__new__.__annotations__ = dict(types)
            for key in ns:
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in made._fields:
                    setattr(made, key, ns[key])
            return made

    _NamedTupleBase = type.__new__(_NamedTupleMeta, "NamedTuple", (), {})

    def NamedTuple(*args, **kwargs):  # noqa: N802 - typing's name
        """Only as a base class: ``class Point(NamedTuple): x: int``."""
        raise TypeError("quipu.lite.NamedTuple takes only the class syntax")

    NamedTuple.__mro_entries__ = lambda bases: (_NamedTupleBase,)
