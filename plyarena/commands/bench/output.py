"""Where ``plyarena bench`` modes write: each its own section of docs/benchmarks.md, and the console."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.tables import TextTable
from plyarena.options import check_writable

PROJECT_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_OUTPUT = PROJECT_ROOT / "docs" / "benchmarks.md"
"""The repository's benchmarks file, wherever the command runs from (``docs/performance.md`` reads it)."""
FILE_HEADER = "# Benchmarks\n\nWritten by `plyarena bench MODE`; each mode rewrites only its own section.\n"


def write_section(path: Path, mode: str, markdown: str) -> None:
    """Put ``markdown`` in ``mode``'s section of the benchmarks file, replacing what was there."""
    start, end = f"<!-- plyarena bench {mode}: start -->", f"<!-- plyarena bench {mode}: end -->"
    section = f"{start}\n{markdown.rstrip()}\n{end}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else FILE_HEADER
    if start in text and end in text:
        before, rest = text.split(start, 1)
        after = rest.split(end, 1)[1].lstrip("\n")
        text = before + section + ("\n" + after if after else "")  # (one blank line before what follows)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def add_quick_and_output(parser: argparse.ArgumentParser) -> None:
    """The options every mode that has a quick form shares."""
    parser.add_argument("--quick", action="store_true", help="a small run that checks the command works")
    parser.add_argument(
        "--output",
        type=Path,
        help=f"benchmarks file to update (default {DEFAULT_OUTPUT}; with --quick: none)",
    )


def output_unless_quick(args: argparse.Namespace) -> Path | None:
    """Where the mode's section goes: ``--output``, by default the benchmarks file, but nowhere for
    ``--quick``; checked writable now, so that a run of minutes does not end in a traceback."""
    output = args.output if args.output is not None else (None if args.quick else DEFAULT_OUTPUT)
    if output is not None:
        check_writable(output)
    return output


def write_output(output: Path | None, console: Console, mode: str, markdown: str) -> None:
    """Write ``mode``'s section to ``output``, if there is one."""
    if output is not None:
        write_section(output, mode, markdown)
        console.print(f"wrote the {mode} section of {output}")


def print_tables(console: Console, tables: list[TextTable], notes: Sequence[str]) -> None:
    for text_table in tables:
        table = Table(*text_table.header, title=text_table.title)
        for row in text_table.rows:
            table.add_row(*row)
        console.print(table)
    for note in notes:
        console.print(f"[yellow]{note}[/yellow]")
