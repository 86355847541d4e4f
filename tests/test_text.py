"""Name and chat rules as pure functions: a mended name passes the rules, a name that passes is left alone,
and only spaces are stripped from the ends."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.errors import ErrorCode, ProtocolError
from server.protocol import MAX_CHAT_LENGTH, MAX_NAME_LENGTH
from server.text import clean_name, clean_text, repaired_name

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


def test_spaces_at_either_end_are_stripped() -> None:
    assert clean_name("\u3000 Ada\u00a0 ", MAX_NAME_LENGTH) == "Ada"
    assert clean_text("  good game\u2003", "chat", MAX_CHAT_LENGTH) == "good game"


@pytest.mark.parametrize("text", ["\tAda", "Ada\n", "Ada\u2028", "\x1fAda\x1c", "Ada\x85", "\rAda\u2029"])
def test_a_control_character_or_line_break_at_an_end_is_refused_not_dropped(text: str) -> None:
    """As anywhere else in the text: ``str.strip`` would drop these quietly, and docs/protocol.md says
    that text holding one is refused."""
    for clean in (
        lambda: clean_name(text, MAX_NAME_LENGTH),
        lambda: clean_text(text, "chat", MAX_CHAT_LENGTH),
    ):
        with pytest.raises(ProtocolError) as refused:
            clean()
        assert refused.value.code == ErrorCode.BAD_FIELD
