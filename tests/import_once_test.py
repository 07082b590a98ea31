"""A bulk import touches each note's bytes once: one scan of each byte of the file it becomes (its
frontmatter, then its body as its own text, then each other field), no parse of what it rendered,
and git's index built from each file's status as it was written. Each check here compares the
single pass with what it replaces, on the secret corpus and on notes made to be awkward."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

from quipu.store import scanned, secret_patterns, secret_rules, secrets_scan
from quipu.store.memory import MAX_FILE_BYTES, Memory, parse_memory, render_memory
from quipu.store.store import memory_fields
from testing.fixtures import git, make_store, quipu
from testing.secret_corpus import benign_cases, secret_cases


def _file_and_each_field(memory: Memory) -> bool:
    """What the import checked before: the whole file, then every field alone."""
    data = render_memory(memory)
    texts = [data.decode("utf-8"), *memory_fields(memory).values()]
    return any(secrets_scan.find_secrets(text, marker=True) for text in texts)


def _placed(text: str) -> list[tuple[dict[str, object], str]]:
    """``text`` as a note's body (first line and further down), title, description, tags."""
    line = " ".join(text.split())[:300] or "x"
    return [({"title": "Note"}, text + "\n"), ({"title": "Note"}, "\n" + text + "\n\nmore words\n"),
            ({"title": line}, "body\n"), ({"title": "Note", "description": line}, "body\n"),
            ({"title": "Note", "topics": [w for w in text.split() if len(w) <= 80][:50]}, "body\n"),
            ({"title": line}, text + "\n")]


def test_one_scan_of_each_byte_finds_what_the_file_and_each_field_scanned_apart_found() -> None:
    checked = found = 0
    for case in [*secret_cases(), *benign_cases()]:
        for fields, body in _placed(case.text):
            values = {"id": "a1b2c3d4e5f60718", "class": "project-note", "origin": "import", "created": "2026-01-02"}
            try:
                memory = Memory.create({**values, **fields}, body)
            except Exception:  # noqa: BLE001 - a title a note could not have: not a placement to compare
                continue
            scanned._CLEAN.clear()  # each placement scanned afresh, as one import's first look at it
            once = scanned.rendered_holds_secret(render_memory(memory), memory_fields(memory), marker=True)
            assert once == _file_and_each_field(memory), (case.family, case.text[:80], sorted(fields))
            checked += 1
            found += once
    assert checked > 2_500 and found > checked // 3


def test_a_file_found_clean_in_parts_is_not_scanned_again_and_any_other_bytes_are() -> None:
    memory = Memory.create({"id": "a1b2c3d4e5f60719", "title": "Deploys", "class": "rule", "origin": "import",
                            "created": "2026-01-02"}, "Deploys go through the CI pipeline.\n")
    data = render_memory(memory)
    assert not scanned.rendered_holds_secret(data, memory_fields(memory))
    assert scanned.refuse_secrets({memory.path: data}, "", fields=memory_fields(memory)) == []
    rng = random.Random(3)
    key = "ghp_" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789") for _ in range(36))
    marked = data + f"token {key} quipu:allow-secret\n".encode()
    assert not scanned.rendered_holds_secret(marked, memory_fields(memory), marker=True)
    assert scanned.find_secrets(marked) != []  # vouched for by its marker only: never remembered as clean


def test_the_prefixes_a_text_holds_are_found_in_one_pass_as_the_alternatives_it_can_match() -> None:
    anchored = next(r.pattern for r in secret_rules.RULES if isinstance(r.pattern, secret_patterns.Anchored))
    assert isinstance(anchored, secret_patterns.Anchored)
    rng = random.Random(5)
    anchors = [a for group in anchored.anchors for a in group]
    texts = [case.text for case in [*secret_cases(), *benign_cases()]]
    texts += [" ".join(rng.choice(anchors) + rng.choice(["", "x", " "]) for _ in range(rng.randint(0, 6)))
              for _ in range(300)]
    for text in texts:
        naive = tuple(i for i, group in enumerate(anchored.anchors) if not group or any(a in text for a in group))
        assert anchored._chosen(text) == naive, text[:80]


def test_every_match_of_a_token_family_holds_one_of_its_literals() -> None:
    """The literals an alternative is chosen by are in every match of it: over the corpus, each
    alternative alone finds nothing in a text that holds none of its literals."""
    anchored = next(r.pattern for r in secret_rules.RULES if isinstance(r.pattern, secret_patterns.Anchored))
    assert isinstance(anchored, secret_patterns.Anchored)
    texts = [case.text for case in [*secret_cases(), *benign_cases()]]
    matched = 0
    for alternative, literals in zip(anchored.alternatives, anchored.anchors, strict=True):
        if not literals:
            continue
        pattern = re.compile(anchored.head + alternative + anchored.tail)
        for text in texts:
            for found in pattern.finditer(text):
                assert any(literal in found.group() for literal in literals), (alternative, found.group())
                matched += 1
    assert matched >= 40 and sum(1 for a in anchored.anchors if a) >= len(anchored.alternatives) - 1
    assert secret_patterns.literals(r"[A-Fa-f0-9]{20,}NRAL") == ("NRAL",)
    assert secret_patterns.literals(r"(?:AKIA|A3T[A-Z0-9])[A-Z0-9]{16}") == ("AKIA", "A3T")
    assert secret_patterns.literals(r"[ps]k\.eyJ[\w\-]{20,}") == ("pk.eyJ", "sk.eyJ")
    assert secret_patterns.literals(r"gh[pou]_[A-Z]{30}") == ("ghp_", "gho_", "ghu_")
    assert secret_patterns.literals(r"gl(?:pat|dt)-\w+") == ("glpat-", "gldt-")
    assert secret_patterns.literals(r"do[opr]_v1_[a-f0-9]{64}") == ("doo_v1_", "dop_v1_", "dor_v1_")
    assert secret_patterns.literals(r"https://[\w\-]+\.webhook\.office\.com/\S+") == (".webhook.office.com/",)
    assert secret_patterns.literals(r"ab?c") == () == secret_patterns.literals(r"x[0-9]+yz|q")  # "a": too common
    assert secret_patterns.literals(r"abc?d") == ("ab",) and secret_patterns.literals(r"[MNO][a-z]{20}") == ()
    assert secret_patterns.literals(r"(?i)[0-9]{4}secret") == () == secret_patterns.literals(r"[0-9]+(?:a|b)")
    assert secret_patterns.literals(r"[a-z]{3}_(?:live|prod)_\d+") == ("_live_", "_prod_")
    assert secret_patterns.literals(r"[a-z]+(?:live|prod)?_\d+") == () == secret_patterns.literals(r"[a-z]+(?:ab|c.d)x")
    assert secret_patterns.literals(r"x[ab]?y+z") == ()  # neither x nor y alone says enough; "x" + an absent [ab]: no start


def _awkward_notes(folder: Path) -> dict[str, str]:
    """Notes whose rendering is least plain, and two that may not enter (path -> why)."""
    folder.mkdir()
    texts = {
        "quotes.md": '---\ntitle: "He said \\"ship it\\" \\\\ then left"\ntags: ["a \\"b\\"", tab\there]\n---\nbody\n',
        "crlf.md": "# Windows note\r\n\r\nline one\r\nline two\r\n",
        "dashes.md": "# Dashes\n\n---\n\nbetween rules\n\n---\n",
        "blank-start.md": "\n\n\n# Late heading\n\n\n\nbody after blank lines\n\n\n",
        "unicode.md": "---\ntitle: Café \u00e9t\u00e9 \u4e2d\u6587\ndescription: \"line\u2028sep\"\naliases: [x\u00a0y]\n---\n"
                      "\u2028\u2029 body with separators \U0001f600\n",
        "frontmatter-only-dashes.md": "---\ntitle: --- not a fence ---\n---\n--- still body\n",
        "nul.md": "# Nul\n\nbefore\x00after\n",
        "almost-too-big.md": "# Big\n\n" + "x" * (MAX_FILE_BYTES - 60) + "\n",
    }
    for name, text in texts.items():
        (folder / name).write_bytes(text.encode("utf-8"))
    return {"nul.md": "NUL", "almost-too-big.md": "at most"}


def test_awkward_notes_are_committed_as_they_read_back_and_git_s_index_has_their_status(tmp_path: Path) -> None:
    """The import does not parse what it rendered: every committed file reads back as the memory
    the index took, a file the parser would refuse (NUL, over the size once rendered) is skipped
    with the parser's reason, and git's index holds each file's status (nothing to refresh)."""
    folder = tmp_path / "notes"
    refused = _awkward_notes(folder)
    for n in range(300):  # past the count from which new files are made while the tree is built
        (folder / f"plain-{n:03d}.md").write_text(f"# Plain {n}\n\nnote number {n}\n", encoding="utf-8")
    store = make_store(tmp_path / "store")
    done = quipu("--store", str(store.root), "import", "markdown", str(folder), "--json")
    assert done.returncode == 4, done.stderr
    report = json.loads(done.stdout)
    assert {s["path"]: s["reason"] for s in report["skipped"]}.keys() == refused.keys()
    for skipped in report["skipped"]:
        assert refused[skipped["path"]] in skipped["reason"]
    assert len(report["imported"]) == 306
    assert git(store.root, "status", "--porcelain") == ""
    assert git(store.root, "diff-files", "--name-only") == ""  # the index's status of each file is exact
    packs = list((store.root / ".git" / "objects" / "pack").glob("*.idx"))
    assert len(packs) == 1  # the notes' blobs in one pack, not a loose file each
    packed = {line.split()[0] for line in git(store.root, "verify-pack", "-v", str(packs[0])).splitlines()}
    listed = {m["id"]: m for m in json.loads(quipu("--store", str(store.root), "list", "--limit", "0",
                                                   "--json").stdout)}
    for line in git(store.root, "ls-tree", "-r", "HEAD", "memories").splitlines():
        _mode, _kind, blob, rel = line.split(maxsplit=3)
        data = (store.root / rel).read_bytes()
        assert git(store.root, "hash-object", rel).strip() == blob and blob in packed
        memory = parse_memory(data, rel)
        assert render_memory(memory) == data  # what was rendered is what reads back, byte for byte
        assert listed[memory.id]["title"] == memory.title
    rebuilt = quipu("--store", str(store.root), "index", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert {m["id"]: m for m in json.loads(quipu("--store", str(store.root), "list", "--limit", "0",
                                                  "--json").stdout)} == listed
    titles = {m["title"] for m in listed.values()}
    assert 'He said "ship it" \\ then left' in titles and any(re.match(r"Caf\u00e9", t) for t in titles)


def test_a_bulk_write_that_fails_after_its_new_files_were_made_leaves_the_worktree_as_the_branch(tmp_path: Path) -> None:
    """The new files are made while the tree is built; a tree that cannot be built (a file and a
    folder of one name) leaves no file behind, git's index and the branch as they were."""
    from quipu.errors import InvalidMemory
    from quipu.store import gitstore

    store = make_store(tmp_path / "store")
    head = store.head()
    changes: dict[str, bytes | None] = {f"memories/{n % 256:02x}/{n % 256:02x}{n:04d}.md": b"x\n" for n in range(400)}
    changes["memories/00/clash.md"] = b"a file\n"
    changes["memories/00/clash.md/inner.md"] = b"and a folder\n"
    try:
        gitstore.write_files(store.root, changes, "quipu: bulk", create_only=list(changes))
    except InvalidMemory as exc:
        assert "a file and a folder of one name" in str(exc)
    else:
        raise AssertionError("a tree with a file and a folder of one name was built")
    assert store.head() == head
    assert not list((store.root / "memories").rglob("*.md"))
    assert git(store.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (store.root / ".git" / "quipu-pending.json").exists()


def test_a_frontmatter_value_is_written_as_json_writes_it() -> None:
    """The renderer skips json for a plain string or a list of them: the bytes are json's."""
    from quipu.store import memory

    rng = random.Random(9)
    alphabet = ["a", "Z", " ", '"', "\\", "\n", "\t", "\x7f", "\x01", "\u2028", "\xa0", "\u00e9", "\u4e2d", "\U0001f600"]
    values: list[object] = [150.0, None, True, 3, [], [1, "a"], "", "plain words"]
    for _ in range(3_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        values += [text, [text, text[::-1]]]
    for value in values:
        assert memory._json(value) == json.dumps(value, ensure_ascii=False), value
