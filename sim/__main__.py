"""``python -m sim`` is ``dfl-sim``."""

import sys

from sim.cli import main

if __name__ == "__main__":
    sys.exit(main())
