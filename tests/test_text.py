"""Name and chat rules as pure functions: a mended name passes the rules, a name that passes is left alone,
only spaces are stripped from the ends, and marks may not stack into "Zalgo" text while real writing in
any script passes."""

from __future__ import annotations

import shutil
import subprocess
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.errors import ErrorCode, ProtocolError
from server.protocol_base import MAX_CHAT_LENGTH, MAX_NAME_LENGTH
from server.text import (
    INVISIBLE,
    MAX_STACKED_MARKS,
    check_clean_name,
    clean_name,
    clean_text,
    repaired_name,
    shows_something,
    unstacked,
)

# Any code point but surrogates, weighted towards the ones that do not show.
TRICKY = st.sampled_from(
    "\u200b\u200d\u202e\u2066\u3164\u115f\ufeff\u034f\ufe0f\U000e0100\u2800\u0301\n\t \u00a0"
)
NAMES = st.lists(st.one_of(st.characters(blacklist_categories=("Cs",)), TRICKY), max_size=50).map("".join)


def _combining_marks(text: str) -> int:
    """All the marks in ``text`` that server/text.py counts, in a row or not."""
    return sum(
        unicodedata.category(character) in ("Mn", "Me") or unicodedata.combining(character) != 0
        for character in unicodedata.normalize("NFD", text)
    )


# Mending keeps stacked marks as they were (migration 0002 predates their limit), so only a name with
# too few marks to stack past it is sure to pass once mended.
NAMES_THAT_CANNOT_STACK = NAMES.filter(lambda text: _combining_marks(text) <= MAX_STACKED_MARKS)


@given(NAMES_THAT_CANNOT_STACK)
def test_a_mended_name_passes_the_name_rules_as_it_is(text: str) -> None:
    mended = repaired_name(text, MAX_NAME_LENGTH)
    if mended is not None:
        assert clean_name(mended, MAX_NAME_LENGTH) == mended


@given(NAMES)
def test_a_name_is_clean_as_it_comes_only_if_clean_name_keeps_it_as_it_is(text: str) -> None:
    """What names from another instance are held to (server/lobby.py): exactly what a local name passes."""
    try:
        cleaned = clean_name(text, MAX_NAME_LENGTH)
    except ProtocolError as refused:
        with pytest.raises(ProtocolError) as error:
            check_clean_name(text, MAX_NAME_LENGTH)
        assert (error.value.code, error.value.message) == (refused.code, refused.message)
        return
    if cleaned == text:
        check_clean_name(text, MAX_NAME_LENGTH)
    else:
        with pytest.raises(ProtocolError) as error:
            check_clean_name(text, MAX_NAME_LENGTH)
        assert error.value.code == ErrorCode.BAD_FIELD
    check_clean_name(cleaned, MAX_NAME_LENGTH)  # and what clean_name gives is clean


@pytest.mark.parametrize(
    "text",
    [" Ada", "Ada\u00a0", "Zoe\u0308", "\u2764\ufe0f", "Ada\u202e", "\u2800", "A" * (MAX_NAME_LENGTH + 1)],
)
def test_a_name_that_clean_name_would_change_or_refuse_is_not_clean(text: str) -> None:
    with pytest.raises(ProtocolError) as error:
        check_clean_name(text, MAX_NAME_LENGTH)
    assert error.value.code == ErrorCode.BAD_FIELD
    assert all(character.isascii() and character.isprintable() for character in error.value.message)


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


@given(NAMES)
def test_a_name_that_passes_is_a_chat_line_that_passes(text: str) -> None:
    """Chat is not normalised but counts marks as names do, so a name said in chat is never refused."""
    try:
        cleaned = clean_name(text, MAX_NAME_LENGTH)
    except ProtocolError:
        return
    assert clean_text(cleaned, "chat", MAX_CHAT_LENGTH) == cleaned


# --------------------------------------------------------------------------- stacked marks

ZALGO = "".join(letter + "\u0336\u0321\u030d\u0352\u0489" for letter in "Zalgo")  # 5 marks on each letter


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(ZALGO, id="zalgo"),
        pytest.param("tall e" + "\u0301\u0300\u0302\u0303\u0304", id="five-above"),
        pytest.param("deep " + "x\u0316\u0317\u0318\u0319\u031c", id="five-below"),
        # NFC writes the first "\u00e9" and four acutes, but five accents show: both spellings count five.
        pytest.param("e" + "\u0301" * 5, id="five-decomposed"),
        pytest.param("\u00e9" + "\u0301" * 4, id="five-with-a-composed-one"),
        # Combining class 0, the reason marks are counted by category and not by class.
        pytest.param("\u0e2a" + "\u0e47" * 12, id="thai-maitaikhu-tower"),
        pytest.param("\u0f67\u0f90\u0fb5\u0fa8\u0fb3\u0fba\u0fbc\u0fbb\u0f82", id="tibetan-font-test-stack"),
        pytest.param("ring" + "\u20dd" * 5, id="enclosing-circles"),
    ],
)
def test_more_marks_on_one_character_than_the_limit_are_refused(text: str) -> None:
    for what, clean in (
        ("name", lambda: clean_name(text, MAX_NAME_LENGTH)),
        ("chat", lambda: clean_text(text, "chat", MAX_CHAT_LENGTH)),
    ):
        with pytest.raises(ProtocolError) as refused:
            clean()
        assert refused.value.code == ErrorCode.BAD_FIELD
        assert refused.value.message == (
            f"{what} stacks more than {MAX_STACKED_MARKS} combining marks on one character"
        )


@pytest.mark.parametrize(
    "hidden",
    ["\u200d", "\u200c", "\u200b", "\u2060", "\u200e", "\u3164", "\u2065", "\ufff0"],
    ids=["zwj", "zwnj", "zwsp", "word-joiner", "lrm", "hangul-filler", "unassigned", "unassigned-specials"],
)
def test_a_character_that_shows_nothing_does_not_start_a_new_stack(hidden: str) -> None:
    """Chat allows these, and the marks after one still land on the letter before it: a joiner every
    few marks must not let a tower through."""
    text = "a" + "\u0301\u0300" + hidden + "\u0302\u0303\u0304"
    with pytest.raises(ProtocolError) as refused:
        clean_text(text, "chat", MAX_CHAT_LENGTH)
    assert refused.value.code == ErrorCode.BAD_FIELD and "stacks" in refused.value.message


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("e" + "\u0301\u0300\u0302\u0303", id="at-the-limit"),
        pytest.param(("x" + "\u0301\u0300\u0302\u0303") * 3, id="at-the-limit-on-each-letter"),
        pytest.param("\u0301\u0300\u0302\u0303 \u0301\u0300\u0302\u0303", id="a-space-starts-a-new-stack"),
        # Devanagari vowel sign I (Mc) takes room: the marks after it stack on it, not on the KA.
        pytest.param("\u0915\u0951\u0952\u0953\u0954\u093f\u0901", id="a-spacing-mark-starts-a-new-stack"),
    ],
)
def test_marks_up_to_the_limit_on_each_character_pass(text: str) -> None:
    assert clean_name(text, MAX_NAME_LENGTH) == unicodedata.normalize("NFC", text)
    assert clean_text(text, "chat", MAX_CHAT_LENGTH) == text


REAL_NAMES = [
    pytest.param("Nguy\u1ec5n Th\u1ecb Ph\u01b0\u01a1ng", id="vietnamese"),  # ễ is e + circumflex + tilde
    pytest.param("\u1ecc\u0300\u1e63\u1ecd\u0301", id="yoruba"),  # Ọ̀ṣọ́: dot below and tone
    pytest.param("\u1faf \u1fa2 \u0390", id="polytonic-greek"),  # ᾯ ᾢ ΐ: up to 3 marks decomposed
    # וּמִשָּׁ֗ם ("and from there", Genesis 2:10): shin with qamats, dagesh, shin dot and revia, 4 marks.
    pytest.param("\u05d5\u05bc\u05de\u05b4\u05e9\u05b8\u05bc\u05c1\u0597\u05dd", id="hebrew-cantillated"),
    pytest.param("\u05e8\u05b8\u05d0\u05e9\u05b4\u05bd\u05c1\u05d9\u05dd", id="hebrew-meteg"),  # רָאשִֽׁים
    pytest.param(
        "\u0628\u0650\u0633\u0652\u0645\u0650 \u0671\u0644\u0644\u0651\u064e\u0670\u0647\u0650",
        id="arabic-vowelled",
    ),
    pytest.param(
        "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22 \u0e17\u0e35\u0e48 \u0e1b\u0e39\u0e48 \u0e01\u0e47",
        id="thai",
    ),
    pytest.param(
        "\u0915\u094d\u0937\u0924\u094d\u0930\u093f\u092f \u0939\u093f\u0902\u0926\u0940", id="devanagari"
    ),
    # अ॒ग्निमी॑ळे, the first word of the Rigveda, with its accents.
    pytest.param("\u0905\u0952\u0917\u094d\u0928\u093f\u092e\u0940\u0951\u0933\u0947", id="vedic-accents"),
    pytest.param("\u0f56\u0f66\u0f92\u0fb2\u0f74\u0f56\u0f66", id="tibetan-stack"),  # བསྒྲུབས: 3 marks
    pytest.param("\u0f67\u0f71\u0f74\u0f83 \u0f67\u0fb2\u0f71\u0f72\u0f7f", id="tibetan-sanskrit"),  # ཧཱུྃ ཧྲཱིཿ
    pytest.param("\u101b\u1014\u103a\u1000\u102f\u1014\u103a\u1019\u103c\u102d\u102f\u1037", id="burmese"),
    pytest.param("\u100a\u103e\u102d\u102f\u1037", id="burmese-four-marks"),  # ညှို့
    pytest.param("\U0001f44d\U0001f3fd \u2764 #\u20e3", id="emoji-modifier-keycap"),
]

REAL_LINES = [
    *REAL_NAMES,
    # Variation selectors are invisible, refused in names like the joiners; chat keeps them.
    pytest.param("\U0001f44d\U0001f3fd \u2764\ufe0f #\ufe0f\u20e3", id="emoji-modifier-selector-keycap"),
    pytest.param("\U0001f469\u200d\u2764\ufe0f\u200d\U0001f48b\u200d\U0001f468", id="emoji-zwj-kiss"),
    pytest.param("\U0001f3f3\ufe0f\u200d\U0001f308 \U0001f9d1\U0001f3ff\u200d\U0001f680", id="emoji-zwj"),
    pytest.param("\U0001f441\ufe0f\u200d\U0001f5e8\ufe0f", id="emoji-zwj-selectors"),
    pytest.param(
        "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", id="emoji-tag-flag"
    ),
    pytest.param("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", id="persian-zwnj"),
    pytest.param("\u0915\u094d\u200d\u0937", id="devanagari-zwj-half-form"),
]


@pytest.mark.parametrize("text", REAL_NAMES)
def test_real_writing_in_a_name_passes(text: str) -> None:
    assert clean_name(text, MAX_NAME_LENGTH) == unicodedata.normalize("NFC", text)


@pytest.mark.parametrize("text", REAL_LINES)
def test_real_writing_in_chat_passes_composed_or_decomposed(text: str) -> None:
    for form in (text, unicodedata.normalize("NFC", text), unicodedata.normalize("NFD", text)):
        assert clean_text(form, "chat", MAX_CHAT_LENGTH) == form


@pytest.mark.parametrize("blank", ["\u3164", "\u3164 \u115f", "\u200b\u3164"])
def test_a_line_of_hangul_fillers_shows_nothing(blank: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        clean_text(blank, "chat", MAX_CHAT_LENGTH)
    assert refused.value.message == "chat shows nothing: it is only invisible characters"


MARKS = st.sampled_from("\u0301\u0300\u0327\u0e47\u20dd\ufe0f\u200d\u2065")
"""Marks above, below, Thai's of class 0, an enclosing one, a variation selector; two that show nothing."""


@given(st.lists(st.one_of(st.characters(blacklist_categories=("Cs",)), MARKS), max_size=60).map("".join))
def test_mended_text_keeps_to_the_limit_and_text_within_it_is_kept_as_is(text: str) -> None:
    """Migration 0005's mending: what it leaves stacks no more than the rules allow, and it leaves alone
    whatever they accept (even a line not in NFC)."""
    mended = unstacked(text)
    try:
        clean_text(mended, "chat", 10**6)
    except ProtocolError as refused:
        assert "stacks" not in refused.message  # (refused for something else: blank, control characters)
    try:
        clean_text(text, "chat", 10**6)
    except ProtocolError:
        return
    assert mended == text


# --------------------------------------------------------------------------- invisible characters

LOOKALIKES = [
    pytest.param("alice\u034f", "U+034F", id="combining-grapheme-joiner"),
    pytest.param("ali\ufe0dce", "U+FE0D", id="variation-selector-14"),
    pytest.param("ali\U000e0100ce", "U+E0100", id="variation-selector-17"),
    pytest.param("bob\u180b", "U+180B", id="mongolian-free-variation-selector"),
    pytest.param("bob\u17b4", "U+17B4", id="khmer-inherent-vowel"),
    pytest.param("\u2800", "U+2800", id="braille-pattern-blank"),
    pytest.param("bob \U0001d159", "U+1D159", id="musical-null-notehead"),
    pytest.param("bob\U00016fe4", "U+16FE4", id="khitan-filler"),
    pytest.param("bob\u00ad", "U+00AD", id="soft-hyphen"),
]


@pytest.mark.parametrize(("name", "code_point"), LOOKALIKES)
def test_a_name_holding_a_character_that_does_not_show_is_refused_naming_it(
    name: str, code_point: str
) -> None:
    """``alice\\u034f`` would look like ``alice``, and ``\\u2800`` like no name at all."""
    with pytest.raises(ProtocolError) as refused:
        clean_name(name, MAX_NAME_LENGTH)
    assert refused.value.code == ErrorCode.BAD_FIELD
    assert refused.value.message.startswith(f"name contains {code_point} (")
    assert "does not show" in refused.value.message


@pytest.mark.parametrize(("name", "code_point"), LOOKALIKES)
def test_mending_drops_a_character_that_does_not_show(name: str, code_point: str) -> None:
    hidden = chr(int(code_point[2:], 16))
    assert repaired_name(name, MAX_NAME_LENGTH) == (name.replace(hidden, "").strip() or None)


def test_a_name_drops_the_presentation_selectors_that_keyboards_add_after_emoji() -> None:
    """A heart typed on a phone is U+2764 U+FE0F: dropped, not refused; after a letter it hid nothing
    either (``ali\ufe0fce`` is then plainly ``alice``). Alone, it leaves no name."""
    assert clean_name("Anna \u2764\ufe0f", MAX_NAME_LENGTH) == "Anna \u2764"
    assert clean_name("ali\ufe0fce\ufe0e", MAX_NAME_LENGTH) == "alice"
    assert clean_name("e\ufe0f\u0301", MAX_NAME_LENGTH) == "\u00e9"  # then in NFC, as every name is
    with pytest.raises(ProtocolError, match="name is blank"):
        clean_name(" \ufe0f ", MAX_NAME_LENGTH)


def test_no_default_ignorable_code_point_shows_in_a_name_or_makes_a_line_show() -> None:
    """All of Unicode's list, one by one: each is refused in a name (but the presentation selectors,
    dropped) and shows nothing in a line."""
    for hidden in INVISIBLE - {"\ufe0e", "\ufe0f"}:
        with pytest.raises(ProtocolError, match=f"U\\+{ord(hidden):04X}"):
            clean_name(f"a{hidden}", MAX_NAME_LENGTH)
        assert not shows_something(f" {hidden} ")


def test_the_table_of_default_ignorable_code_points_is_unicodes() -> None:
    """Checked against a second copy of DerivedCoreProperties.txt: Perl's, where it has this Python's
    Unicode version."""
    if shutil.which("perl") is None:
        pytest.skip("no perl to read its Unicode tables")
    ucd = 'use Unicode::UCD qw(prop_invlist); print Unicode::UCD::UnicodeVersion(), " ", '
    ucd += 'join(",", prop_invlist("Default_Ignorable_Code_Point"))'
    version, inversion_list = subprocess.run(
        ["perl", "-e", ucd], capture_output=True, text=True, check=True, timeout=30
    ).stdout.split()
    if version != unicodedata.unidata_version:
        pytest.skip(f"Perl has Unicode {version}, this Python {unicodedata.unidata_version}")
    bounds = [int(bound) for bound in inversion_list.split(",")]
    perls = {
        chr(code) for start, end in zip(bounds[::2], bounds[1::2], strict=True) for code in range(start, end)
    }
    assert perls == INVISIBLE


@pytest.mark.parametrize(
    "blank",
    ["\u034f", "\ufe0f \ufe0f", "\u2800", "\u2800\u2800 \u2800", "\u180b\u17b4", "\U000e0100", "\U0001d159"],
)
def test_a_line_of_characters_that_do_not_show_shows_nothing(blank: str) -> None:
    for what in ("chat", "reason"):
        with pytest.raises(ProtocolError) as refused:
            clean_text(blank, what, MAX_CHAT_LENGTH)
        assert refused.value.message == f"{what} shows nothing: it is only invisible characters"


@pytest.mark.parametrize("text", ["gg\u034f", "\u2800 gg \u2800", "ali\ufe0fce", "\u2764\ufe0f", "bob\u180b"])
def test_a_line_keeps_characters_that_do_not_show_beside_ones_that_do(text: str) -> None:
    """As with the joiners: chat is kept as sent, invisible characters included, once something shows."""
    assert shows_something(text)
    assert clean_text(text, "chat", MAX_CHAT_LENGTH) == text


def test_a_blank_takes_room_so_ends_a_stack_of_marks() -> None:
    """Unlike a joiner or a filler (see above), the braille blank is as wide as a letter: the marks after
    it are drawn on it, as on a space."""
    within = "a" + "\u0301\u0300\u0302\u0303" + "\u2800" + "\u0301\u0300\u0302\u0303"
    assert clean_text(within, "chat", MAX_CHAT_LENGTH) == within
    assert unstacked(within) == within
