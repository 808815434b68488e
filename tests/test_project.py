"""Project hygiene: .ci/run runs the README's two commands, the code is ruff-clean and its type hints
agree (mypy)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    setup = ROOT.joinpath("README.md").read_text().split("## Set-up: the two commands")[1].split("\n## ")[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", setup, re.S)]


def test_readme_has_exactly_two_setup_commands_and_ci_runs_them() -> None:
    commands = readme_commands()
    assert len(commands) == 2
    ci = ROOT.joinpath(".ci", "run").read_text().splitlines()
    for command in commands:
        assert command in ci, command
    assert "torch==2.13.0" in commands[0]


def test_ruff_clean() -> None:
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed (it is in the test extras: pip install -e '.[test]')")
    proc = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_type_hints_agree_with_the_code(tmp_path: Path) -> None:
    """mypy over bounds, sim, plots and paper_checks with pyproject.toml's [tool.mypy] settings."""
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is not installed (it is in the test extras: pip install -e '.[test]')")
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
