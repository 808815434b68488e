"""``python -m paper_checks`` is ``dfl-check`` (:mod:`paper_checks.cli`),
imported by :func:`bounds.cli_tools.entry`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bounds.cli_tools import entry


def main(argv: Sequence[str] | None = None) -> int:
    """The console script ``dfl-check``."""
    return entry("paper_checks.cli", "dfl-check", argv)


if __name__ == "__main__":
    sys.exit(main())
