"""Subcommands of ``plyarena``; see :mod:`plyarena.cli`."""
