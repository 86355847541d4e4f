"""Name rules as pure functions: a mended name passes the rules, and a name that passes is left alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from server.errors import ProtocolError
from server.protocol import MAX_NAME_LENGTH
from server.text import clean_name, repaired_name

# Any code point but surrogates, weighted towards the ones that do not show.
TRICKY = st.sampled_from("\u200b\u200d\u202e\u2066\u3164\u115f\ufeff\u0301\n\t \u00a0")
NAMES = st.lists(st.one_of(st.characters(blacklist_categories=("Cs",)), TRICKY), max_size=50).map("".join)


@given(NAMES)
def test_a_mended_name_passes_the_name_rules_as_it_is(text: str) -> None:
    mended = repaired_name(text, MAX_NAME_LENGTH)
    if mended is not None:
        assert clean_name(mended, MAX_NAME_LENGTH) == mended


@given(NAMES)
def test_a_name_that_passes_the_rules_needs_no_mending(text: str) -> None:
    try:
        cleaned = clean_name(text, MAX_NAME_LENGTH)
    except ProtocolError:
        return
    assert repaired_name(text, MAX_NAME_LENGTH) == cleaned


def test_mending_drops_what_does_not_show_and_keeps_the_rest() -> None:
    assert repaired_name("  Cafe\u0301\u200b \u202eBob  ", MAX_NAME_LENGTH) == "Caf\u00e9 Bob"
    assert repaired_name("\u3164\u200d \u2066", MAX_NAME_LENGTH) is None
    assert repaired_name("ab   cd", 4) == "ab"  # cut, then no trailing space
