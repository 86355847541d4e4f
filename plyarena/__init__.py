"""The ``plyarena`` command line: the one place that starts and wires the rooms."""
