"""The compiled kernels: optional C extensions, each the fast twin of a pure-Python module that stays the
reference and the fallback (everything else about the project is in pyproject.toml).

Where no C compiler is found, ``pip install`` warns and installs without them, as websockets does with its
``speedups.c``. With ``PLYARENA_BUILD_KERNELS=required`` a kernel that fails to build fails the install, so
that CI cannot pass on the fallback while believing it tests the kernels. A new kernel is one more line of
``KERNELS``.
"""

import os

from setuptools import Extension, setup

REQUIRED = os.environ.get("PLYARENA_BUILD_KERNELS") == "required"

KERNELS = {
    # module: its C sources
    # bots/connect4_exact_search.py's exact Connect Four search (bots/connect4_solver.py uses it where built)
    "bots._connect4_exact_search": ["bots/connect4_exact/module.c"],
    # bots/negamax.py's search, move generation, evaluation and perft, a file per game (bots/speedups.py)
    "bots._kernel": [f"bots/kernel/{name}.c" for name in ("module", "connect4", "othello", "checkers")],
}
HEADERS = {
    # module: the headers its sources include, so that changing one rebuilds it
    "bots._connect4_exact_search": [
        f"bots/connect4_exact/{name}.h" for name in ("bitboard", "table", "search")
    ],
    "bots._kernel": [
        f"bots/kernel/{name}.h"
        for name in (
            "kernel",
            "small_moves",
            "negamax",
            "searcher_type",
            "checkers_history",
            "othello_endgame",
        )
    ],
}

setup(
    ext_modules=[
        Extension(module, sources, depends=HEADERS.get(module, []), optional=not REQUIRED)
        for module, sources in KERNELS.items()
    ],
)
