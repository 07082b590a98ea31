"""The frontmatter read without YAML (a date, plain words, a flow list of plain words beside the
JSON lines quipu writes) is what YAML's safe loader reads, or is left to it: over frontmatter made
of awkward values, every mapping the fast path gives equals the loader's."""
from __future__ import annotations

import datetime
import random

from quipu.store.frontmatter import _fast_fields, parse_fields
from quipu.store.frontmatter_yaml import yaml_fields

_VALUES = (
    "2026-01-02", "2026-13-45", "2026-1-2", "2026-02-30", "1999-12-31", "2026-01-02T10:00:00Z", "20260102",
    "Deploy notes", "Deploy  notes", "Deploy notes ", " Deploy", "yes", "Yes", "YES", "no", "No", "on", "Off",
    "true", "False", "null", "Null", "NULL", "~", "y", "n", "no way", "on call", "null pointer", "_private",
    "part-0", "a-", "-a", "- a", "a: b", "a #b", "a#b", "x_1", "0x1F", "12", "1.5", ".inf", ".nan",
    "Note - draft", "é", "café au lait", "[imported, part-0]", "[a,b , c]", "[ a ]", "[]", "[a, yes]", "[a, No]",
    "[a b, c]", "[a, b,]", "[a, [b]]", "[a, 'b']", "[-a]", "[a, 1]", "[a, null]", "[a, ~]", '"quoted"',
    '"with \\"escape\\""', "'single'", "{a: b}", "&anchor x", "*alias", "!!str x", "|", ">", "a\tb", "=", "<<",
)
# (A JSON number such as 1e3 is read as JSON reads it, as quipu writes it; YAML 1.1 reads a string.)
_KEYS = ("title", "tags", "date", "created", "description", "on", "yes", "draft", "aliases")


def test_a_fast_read_is_what_yaml_reads() -> None:
    rng = random.Random(13)
    fast = 0
    for _ in range(4_000):
        lines = [f"{rng.choice(_KEYS)}: {rng.choice(_VALUES)}" for _ in range(rng.randint(1, 4))]
        head = "\n".join(lines)
        got = _fast_fields(head)
        if got is None:
            continue
        if any(k in ("on", "yes") for k in got):
            continue  # a key YAML reads as a boolean: so does every JSON line before, and no field of a note has it
        try:
            assert got == yaml_fields(head, "note.md"), head
        except Exception as exc:  # noqa: BLE001 - the loader refuses what the fast path accepted
            raise AssertionError(f"the fast path read {head!r}, the loader refuses it: {exc}") from None
        fast += 1
    assert fast > 250


def test_the_common_frontmatter_of_a_note_is_read_without_yaml_as_yaml_reads_it() -> None:
    head = 'title: "Deploys"\ntags: [imported, part-3]\ndate: 2026-01-05\ndescription: How we ship'
    assert _fast_fields(head) == {"title": "Deploys", "tags": ["imported", "part-3"],
                                  "date": datetime.date(2026, 1, 5), "description": "How we ship"}
    assert _fast_fields(head) == yaml_fields(head, "note.md")
    assert _fast_fields("draft: yes") is None and _fast_fields("date: 2026-02-30") is None
    fields, body = parse_fields(f"---\n{head}\n---\nbody\n", "note.md")
    assert fields["date"] == datetime.date(2026, 1, 5) and body == "body\n"
