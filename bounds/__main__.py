"""``python -m bounds`` is ``dfl-bounds``."""

import sys

from bounds.cli import main

if __name__ == "__main__":
    sys.exit(main())
