"""``python -m sim`` is ``dfl-sim`` (:mod:`sim.cli`),
imported by :func:`bounds.cli_tools.entry`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bounds.cli_tools import entry


def main(argv: Sequence[str] | None = None) -> int:
    """The console script ``dfl-sim``."""
    return entry("sim.cli", "dfl-sim", argv)


if __name__ == "__main__":
    sys.exit(main())
