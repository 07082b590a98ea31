"""The history index's vector file: 16-bit rows that score as the float32 vectors do, and an
index of the float32 layout rebuilt on first use."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from quipu import cli
from quipu.history import index
from quipu.history.archive import Layout
from quipu.history.search import search
from quipu.index import embed
from testing.transcripts import Transcript

TEXTS = [
    "The orders endpoint takes four seconds. Can you find out why?",
    "The orders query does a sequential scan: there is no index on orders.created_at.",
    "Added revision 4f2a with the index on orders.created_at.",
    "Which static site generator are we on?",
    "Hugo 0.140, configured in hugo.toml.",
    "I just moved to Melbourne, so the posts should go out at 9am AEST.",
    "Noted: I set the publish schedule to 09:00 Australia/Melbourne.",
    "ok",
    "",  # no piece: the zero vector, which matches nothing
]


def embedder() -> embed.Embedder:
    files = embed.locate()
    if files is None:
        pytest.skip("wordllama is not installed: no vectors to store")
    return embed.Embedder.load(files)


def test_stored_rows_score_as_the_float32_vectors_do(tmp_path: Path) -> None:
    assert index.DIM == embed.DIM  # the index's own copy, kept so that importing it needs no numpy
    e = embedder()
    vectors = e.many(TEXTS)
    path = tmp_path / "vectors.i16"
    index._write_rows(path, list(range(1, len(TEXTS) + 1)), vectors)
    assert path.stat().st_size == len(TEXTS) * index.ROW
    for query in ("where does the user live now", "slow database query", "hugo"):
        q = e.one(query)
        exact = vectors @ q
        stored = index.similarities(path, q, len(TEXTS))
        assert np.abs(stored - exact).max() < 1e-4
        assert stored[-1] == 0.0  # the empty text's row
        assert list(np.argsort(-stored, kind="stable")) == list(np.argsort(-exact, kind="stable"))
    index._zero_rows(path, [2])  # a replaced turn's row: it scores zero for every query
    assert index.similarities(path, e.one("orders index"), len(TEXTS))[1] == 0.0


def test_an_index_with_float32_vectors_is_rebuilt_on_first_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    e = embedder()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    t = Transcript("5d1c2a10-5b7e-4c21-9d0a-3e4f5a6b7c09", "/home/dev/blog")
    for n, text in enumerate(TEXTS[:7]):
        (t.user if n % 2 == 0 else t.assistant)(text)
    t.write(tmp_path / "claude" / "projects")
    assert cli.main(["history", "index"]) == 0
    capsys.readouterr()
    layout = Layout.default()
    before = [h.to_json() for h in search("where does the user live now").hits]
    assert any(h["meaning_rank"] is not None for h in before)
    # The layout before 16-bit rows: schema 2, one float32 row per turn in vectors.f32.
    db = sqlite3.connect(layout.index)
    texts = [r[0] for r in db.execute("SELECT text FROM turns ORDER BY id")]
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    db.commit()
    db.close()
    old = layout.root / index.OLD_VECTORS
    old.write_bytes(e.many(texts).astype("<f4").tobytes())
    layout.vectors.unlink()
    assert not index.is_current(layout)
    assert [h.to_json() for h in search("where does the user live now").hits] == before
    assert index.is_current(layout) and not old.exists()
    assert layout.vectors.stat().st_size == len(texts) * index.ROW
