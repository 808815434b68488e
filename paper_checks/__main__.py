"""``python -m paper_checks`` is ``dfl-check``."""

import sys

from paper_checks.cli import main

if __name__ == "__main__":
    sys.exit(main())
