"""``dfl-plot RUN_DIR [RUN_DIR ...] [--x step|model_time] [--out FILE]``: draw runs' curves (PNG + PDF)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from plots.figures import run_curves, save


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dfl-plot", description="Draw the curves of dfl-sim runs.")
    parser.add_argument("runs", nargs="+", help="run folders (each with metrics.csv)")
    parser.add_argument("--x", choices=("step", "model_time"), default="step")
    parser.add_argument("--out", help="output file (default RUN_DIR/curves.png and .pdf)")
    args = parser.parse_args(argv)
    frames = {}
    for folder in args.runs:
        csv = Path(folder) / "metrics.csv"
        if not csv.is_file():
            print(f"dfl-plot: error: {csv} does not exist (expected a dfl-sim run folder)", file=sys.stderr)
            return 2
        frames[Path(folder).name] = pd.read_csv(csv)
    paths = save(run_curves(frames, args.x), args.out or Path(args.runs[0]) / "curves")
    print("wrote " + " and ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
