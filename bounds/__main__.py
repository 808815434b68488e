"""``python -m bounds`` is ``dfl-bounds`` (:mod:`bounds.cli`),
imported by :func:`bounds.cli_tools.entry`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bounds.cli_tools import entry


def main(argv: Sequence[str] | None = None) -> int:
    """The console script ``dfl-bounds``."""
    return entry("bounds.cli", "dfl-bounds", argv)


if __name__ == "__main__":
    sys.exit(main())
