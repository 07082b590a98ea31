"""Reading the index on the prompt path: the connection, its meta and settings, stems and document frequencies."""
import sys

from quipu.prompt import _fastjson, _fs
from quipu.prompt.stem import TOKENIZE, fts_term

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from sqlite3 import Connection
    from typing import Any


def _uri(path: str) -> str:
    return "file:" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23") + "?mode=ro"


def _lru_cache(maxsize: int = 128, typed: bool = False) -> "Any":
    """``functools.lru_cache`` as ``_sqlite3`` calls it (positional maxsize), on the same C core.

    Why a stand-in: ``functools`` costs the hook's process several times what this does
    (bench/bench_stand_ins.py); ``cache_info()`` gives the same four numbers, as a plain tuple."""
    import _functools  # type: ignore[import-not-found]  # the C half of functools, no stub

    def info(*numbers: int) -> "tuple[int, ...]":
        return numbers

    return lambda function: _functools._lru_cache_wrapper(function, maxsize, typed, info)


def sqlite_module() -> "Any":
    """The ``_sqlite3`` C module, loaded without ``functools``.

    ``_sqlite3`` takes ``functools.lru_cache`` when it loads (for its statement cache), and
    ``functools`` pulls in ``collections``, ``operator``, ``reprlib`` and ``types``: two thirds of
    the module's load time. When ``functools`` is not loaded yet, a stand-in module offering only
    ``lru_cache`` (built on the same C ``_lru_cache_wrapper``) is in ``sys.modules`` while
    ``_sqlite3`` loads, and is taken out again at once, so any later ``import functools`` gets the
    real one. If the stand-in is not enough (another Python), the normal import runs."""
    loaded = sys.modules.get("_sqlite3")
    if loaded is not None:
        return loaded
    if "functools" not in sys.modules:
        stand_in = type(sys)("functools")
        stand_in.lru_cache = _lru_cache  # type: ignore[attr-defined]
        sys.modules["functools"] = stand_in
        try:
            import _sqlite3

            return _sqlite3
        except Exception:  # noqa: BLE001 - fall back to the normal import below
            pass
        finally:
            if sys.modules.get("functools") is stand_in:
                del sys.modules["functools"]
    import _sqlite3

    return _sqlite3


def open_index(path: str) -> "Connection":
    """Open the index read-only; raises sqlite3.Error if it is missing or unreadable."""
    sqlite = sqlite_module()
    if not _fs.isfile(path):
        raise sqlite.OperationalError(f"no index at {path}")
    db: Connection = sqlite.connect(_uri(path), uri=True, timeout=0.5, isolation_level=None)
    return db


# The prompt server's open indexes: path -> ((device, inode) of the file it opened, connection).
# None in a hook process, which opens the index once and is gone.
_kept: "dict[str, tuple[tuple[int, int], Connection]] | None" = None
KEEP_AT_MOST = 8


def keep_connections() -> None:
    """From now on ``connect`` keeps each index open between prompts (the prompt server)."""
    global _kept
    _kept = {}


def connect(path: str) -> "Connection":
    """``open_index(path)``, or in the prompt server the connection kept for this very file.

    A kept connection is used only while ``path`` is still the file it opened (same device and
    inode): a rebuild that replaces the file gets a new connection. Writes made in place are seen
    anyway: each prompt reads in a transaction of its own (``release`` ends it)."""
    if _kept is None:
        return open_index(path)
    try:
        st = _fs.stat(path)  # before opening: a file replaced in between is reopened next time
    except OSError:
        return open_index(path)  # raises the error a missing index gets
    key = (st.st_dev, st.st_ino)
    kept = _kept.pop(path, None)
    if kept is not None and kept[0] == key:
        _kept[path] = kept  # most recently used last
        return kept[1]
    if kept is not None:
        kept[1].close()
    db = open_index(path)
    _kept[path] = (key, db)
    while len(_kept) > KEEP_AT_MOST:
        _kept.pop(next(iter(_kept)))[1].close()
    return db


def release(db: "Connection", ok: bool = True) -> None:
    """Done with a connection from ``connect``: closed, or kept with its transaction ended
    (dropped too when the prompt failed on it: a damaged or replaced index is opened anew)."""
    kept = _kept is not None and any(entry[1] is db for entry in _kept.values())
    if kept and ok:
        if db.in_transaction:
            db.execute("ROLLBACK")
        return
    if kept:
        assert _kept is not None
        for path in [p for p, entry in _kept.items() if entry[1] is db]:
            del _kept[path]
    db.close()


def index_meta(db: "Connection") -> dict[str, str]:
    return dict(db.execute("SELECT key, value FROM meta").fetchall())


def index_config(db: "Connection", meta: "dict[str, str] | None" = None) -> "dict[str, Any]":
    """The store's recall settings (from quipu.toml, copied into the index); ``meta`` when the
    caller already read ``index_meta``."""
    try:
        value = _fastjson.loads((index_meta(db) if meta is None else meta).get("config", "{}"))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def stems_of(db: "Connection", words: "Sequence[str]") -> dict[str, str]:
    """Map each word to the term the index's tokenizer makes of it (stemmed). ASCII words are
    stemmed in Python (``quipu.prompt.stem.fts_term``); any other goes through a temporary FTS5 table."""
    out: dict[str, str] = {}
    others: list[str] = []
    for word in words:
        term = fts_term(word)
        if term is None:
            others.append(word)
        elif term:
            out[word] = term
    if others:
        out.update(_sqlite_stems(db, others))
    return out


def _sqlite_stems(db: "Connection", words: "Sequence[str]") -> dict[str, str]:
    db.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.quipu_q USING fts5(w, tokenize='{TOKENIZE}')"
    )
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.quipu_qv USING fts5vocab(temp, quipu_q, 'instance')")
    db.execute("DELETE FROM temp.quipu_q")
    db.executemany("INSERT INTO temp.quipu_q(rowid, w) VALUES (?, ?)", [(i + 1, w) for i, w in enumerate(words)])
    out: dict[str, str] = {}
    for term, doc, _offset in db.execute("SELECT term, doc, offset FROM temp.quipu_qv ORDER BY doc, offset"):
        word = words[doc - 1]
        out.setdefault(word, term)  # a word that splits into several tokens keeps its first
    return out


def document_frequencies(db: "Connection", words: "Sequence[str]") -> dict[str, int]:
    """Document frequency of each word in the store, after stemming."""
    return frequencies_of(db, words, stems_of(db, words)) if words else {}


def frequencies_of(db: "Connection", words: "Sequence[str]", stems: dict[str, str]) -> dict[str, int]:
    wanted = sorted(set(stems.values()))
    df: dict[str, int] = {}
    sql = "SELECT term, df FROM term_df WHERE term IN ({})"
    for chunk in range(0, len(wanted), 200):
        part = wanted[chunk : chunk + 200]
        marks = ", ".join("?" * len(part))
        try:
            rows = db.execute(sql.format(marks), part).fetchall()
        except sqlite_module().OperationalError:  # an index built before term_df: count the slow way
            sql = "SELECT term, doc FROM memory_vocab WHERE term IN ({})"
            rows = db.execute(sql.format(marks), part).fetchall()
        df.update(rows)
    return {w: df.get(stems.get(w, ""), 0) for w in words}


def store_size_of(db: "Connection", known: "int | None" = None) -> int:
    if known is not None:
        return known
    value = index_meta(db).get("count")
    if value and value.isdigit():
        return int(value)
    return int(db.execute("SELECT count(*) FROM memories").fetchone()[0])


def ordinary_of(db: "Connection", stems: "Sequence[str]") -> "set[str]":
    """The ``stems`` that are ordinary English words (the index's lexicon table); all of them
    when the index has no lexicon (built by an older quipu): nothing is then specific."""
    if not stems:
        return set()
    marks = ", ".join("?" * len(stems))
    try:
        return {row[0] for row in db.execute(f"SELECT term FROM lexicon WHERE term IN ({marks})", list(stems))}
    except sqlite_module().OperationalError:
        return set(stems)
