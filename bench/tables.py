"""The tables of the benchmark reports: shown by rich on the terminal, written as Markdown in the docs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TextTable:
    """A titled table of strings, shown by rich on the terminal and written as Markdown."""

    title: str
    header: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]
    caption: str = ""

    def markdown(self) -> str:
        lines = [f"### {self.title}", ""]
        if self.caption:
            lines += [self.caption, ""]
        lines.append("| " + " | ".join(self.header) + " |")
        lines.append("|" + "|".join("---" for _ in self.header) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


def ratio_text(ratio: float) -> str:
    """A ratio as ``12x``, with a decimal below 10 so that 0.4x does not read as 0x."""
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"
