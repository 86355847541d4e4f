"""Reading the query string of an HTTP API request: one value per parameter, and a page's size.

Both refuse with a ``ValueError`` whose message says what to change; the HTTP front answers it
``400 bad_field``.
"""

from __future__ import annotations

import re


def one_value(query: dict[str, list[str]], name: str) -> str | None:
    """The value of parameter ``name``, ``None`` if absent. Given twice, or blank, it is refused rather
    than one picked in silence or taken as absent: that is a mistake (an empty field, an unfilled
    template), and a blank ``before`` read as none would page back to the first page, for ever."""
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValueError(f"{name} is given {len(values)} times: give it once")
    if not values[0].strip():
        raise ValueError(f"{name} is blank: give it a value, or leave it out")
    return values[0]


def page_size(text: str | None, default: int, most: int) -> int:
    """The ``limit`` parameter's value: ``default`` if absent, else a whole number from 1 to ``most``
    (ASCII digits only, and few of them: ``int`` also reads other scripts' digits, and long text)."""
    if text is None:
        return default
    if not re.fullmatch("[0-9]{1,9}", text) or not 1 <= int(text) <= most:
        raise ValueError(f"limit must be a whole number from 1 to {most}, not {text!r}")
    return int(text)
