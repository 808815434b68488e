"""Project hygiene: .ci/run runs the README's two commands, and the code is ruff-clean."""

from __future__ import annotations

import re
import shutil
import subprocess
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
