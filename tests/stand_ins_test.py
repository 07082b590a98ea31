"""The prompt path's LRU cache stand-in answers as functools.lru_cache does (json, os.path and math.log
have their own tests: fastjson_test, fs_test, recall_test); bench/bench_stand_ins.py shows what each saves."""
from __future__ import annotations

import functools

from hypothesis import given, settings
from hypothesis import strategies as st

from quipu.prompt import indexread


@given(st.lists(st.integers(min_value=-5, max_value=5), max_size=60), st.integers(min_value=1, max_value=8))
def test_the_lru_cache_stand_in_caches_and_evicts_as_functools_does(calls: list[int], size: int) -> None:
    seen_ours: list[int] = []
    seen_theirs: list[int] = []

    def ours(x: int) -> int:
        seen_ours.append(x)
        return x * x

    def theirs(x: int) -> int:
        seen_theirs.append(x)
        return x * x

    cached_ours = indexread._lru_cache(size)(ours)
    cached_theirs = functools.lru_cache(size)(theirs)
    assert [cached_ours(x) for x in calls] == [cached_theirs(x) for x in calls]
    assert seen_ours == seen_theirs  # the same misses, so the same evictions
    assert cached_ours.cache_info() == cached_theirs.cache_info()


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8")))
def test_the_quick_look_for_terminal_controls_agrees_with_the_character_by_character_one(text: str) -> None:
    from quipu.prompt import fence

    assert fence.has_unsafe(text) == any(fence.unsafe(ch) for ch in text)
