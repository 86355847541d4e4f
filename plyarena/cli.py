"""Ply Arena: a game server for two-player board games, its bots, and the tools to measure them.

Each subcommand is a module in :mod:`plyarena.commands` that defines ``HELP``
(one line), ``configure(parser)`` and ``run(args) -> int``; the module's name,
with ``_`` read as ``-``, is the subcommand's name.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from plyarena import commands
from plyarena.options import CommandError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="plyarena", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        # argparse formats a subcommand's help with %: "95% intervals" must not read as a format
        summary = module.HELP.replace("%", "%%")
        sub = subparsers.add_parser(info.name.replace("_", "-"), help=summary, description=module.HELP)
        module.configure(sub)
        sub.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except CommandError as error:
        print(f"plyarena {args.command}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
