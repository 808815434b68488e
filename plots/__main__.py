"""``dfl-plot RUN_DIR [RUN_DIR ...] [--x step|model_time] [--out FILE]``: draw runs' curves (PNG + PDF).

Each run's legend label is its folder (with as many parent folders as it takes to tell runs apart)
and the settings of its ``config.json`` that differ between the runs. A folder without a usable
``metrics.csv`` (missing, unreadable, without the needed columns, or with no rows) and an
unwritable output are one-line errors (exit 2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from bounds import InputError
from bounds.cli_tools import OneLineParser, pipe_safe
from plots.figures import RUN_PANELS, run_curves, save

IGNORED_SETTINGS = (
    "out",
    "resume",
    "resolved",
    "threads",
    "checkpoint_every",
    "checkpoint_seconds",
    "timeout",
)


def read_metrics(folder: Path, x: str) -> pd.DataFrame:
    """A run's metrics.csv with the columns the figure needs and at least one row."""
    path = folder / "metrics.csv"
    if not path.is_file():
        raise InputError(f"{path} does not exist (expected a dfl-sim run folder)")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(f"{path} is not a readable CSV ({exc}; expected a dfl-sim metrics.csv)") from None
    missing = [c for c in (x, *(c for c, _ in RUN_PANELS)) if c not in frame.columns]
    if missing:
        raise InputError(f"{path} lacks the columns {', '.join(missing)} (expected a dfl-sim metrics.csv)")
    if frame.empty:
        raise InputError(f"{path} has no rows yet (expected at least one logged step)")
    return frame


def labels(folders: list[Path]) -> list[str]:
    """Folder names made unique with parent folders, plus the config settings that differ."""
    depth = 1
    names = [f.name for f in folders]
    while len(set(names)) < len(names) and depth < 8:
        depth += 1
        names = ["/".join(f.resolve().parts[-depth:]) for f in folders]
    configs = []
    for f in folders:
        try:
            configs.append(json.loads((f / "config.json").read_text()))
        except (OSError, ValueError):
            configs.append({})
    keys = sorted({k for c in configs for k in c} - set(IGNORED_SETTINGS))
    differ = [k for k in keys if len({json.dumps(c.get(k), sort_keys=True) for c in configs}) > 1]
    return [
        name
        + (
            " (" + ", ".join(f"{k}={c.get(k)}" for k in differ[:4]) + ")"
            if differ and len(folders) > 1
            else ""
        )
        for name, c in zip(names, configs, strict=True)
    ]


@pipe_safe
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="dfl-plot", description="Draw the curves of dfl-sim runs.")
    parser.add_argument("runs", nargs="+", help="run folders (each with metrics.csv)")
    parser.add_argument("--x", choices=("step", "model_time"), default="step", help="horizontal axis")
    out = "output file; its suffix picks the format (png, pdf, svg, ...), without one NAME.png and NAME.pdf"
    parser.add_argument("--out", help=out + " (default RUN_DIR/curves.png and .pdf)")
    args = parser.parse_args(argv)
    folders = [Path(f) for f in args.runs]
    try:
        frames = dict(zip(labels(folders), (read_metrics(f, args.x) for f in folders), strict=True))
        target = args.out or folders[0] / "curves"
        try:
            paths = save(run_curves(frames, args.x), target)
        except OSError as exc:
            raise InputError(
                f"cannot write {target} ({exc.strerror or exc}; expected a writable path)"
            ) from None
    except InputError as exc:
        print(f"dfl-plot: error: {exc}", file=sys.stderr)
        return 2
    print("wrote " + " and ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
