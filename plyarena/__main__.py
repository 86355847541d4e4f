import sys

from plyarena.cli import main

sys.exit(main())
