"""The provider-token literals table the scanner reads at import is what the patterns give."""
from __future__ import annotations

import subprocess
import sys

from quipu.store import secret_literals, secret_patterns, secret_rules
from testing.fixtures import REPO_ROOT


def test_the_table_holds_each_provider_patterns_literals_as_derived_from_it() -> None:
    assert set(secret_literals.LITERALS) == set(secret_rules.PROVIDER_ALTERNATIVES)
    for pattern in secret_rules.PROVIDER_ALTERNATIVES:
        assert secret_literals.LITERALS[pattern] == secret_patterns.literals(pattern), pattern
    done = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "build_secret_literals.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_pattern_the_table_lacks_or_a_table_left_out_gives_the_same_anchors() -> None:
    alternatives = (*secret_rules.PROVIDER_ALTERNATIVES[:5], r"zq9_[A-Za-z0-9]{24}")
    derived = secret_patterns.Anchored("(", alternatives, ")")
    tabled = secret_patterns.Anchored("(", alternatives, ")", secret_literals.LITERALS)
    assert tabled.anchors == derived.anchors and derived.anchors[-1] == ("zq9_",)
    assert tabled.lowered() == derived.lowered()
    token = "zq9_" + "Ab1" * 8
    assert tabled.for_text(f"key {token} here") is not None and derived.for_text(f"key {token} here") is not None


def test_a_provider_token_that_is_a_path_s_segment_is_found_and_a_longer_run_is_not_one() -> None:
    from quipu.store import secrets_scan

    for text in ("Bucket key at /srv/keys/AKIA4QJX7ZPLM2KD8RTW/creds", "Files read: /home/u/AKIAZ7QWERTYUIOP2345/config",
                 "clone https://x/ghp_9aZxQ3kLm2PqR7sTuV1wXyZ4bC6dE8fG0hJ2/repo"):
        assert secrets_scan.find_secrets(text), text
    blob = "iVBORw0KGgo/AKIA4QJX7ZPLM2KD8RTWxyz/AAAAEUlEQVR42mNk"  # inside a longer run: not a token whole
    assert "provider-token" not in [s.kind for s in secrets_scan.find_secrets(blob)]
