"""dfl-check: runs every registered check, reports, caches, and rejects unknown ids."""

from __future__ import annotations

import json

from paper_checks.cli import main
from paper_checks.registry import STATUSES


def test_quick_run_reports_every_check_and_caches(tmp_path, capsys) -> None:
    assert main(["--quick", "--out", str(tmp_path), "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert all({"id", "claim", "status", "evidence"} <= r.keys() and r["status"] in STATUSES for r in results)
    status = {r["id"]: r["status"] for r in results}
    assert status["zeta-values"] == "holds" and status["lemmas-5-6-7"] == "holds"
    assert status["prop1-noise-free"] == "violated" and status["local-drift"] == "violated"
    assert "could not run" not in status.values()
    report = (tmp_path / "report.md").read_text()
    assert "| prop1-noise-free | Proposition 1 | **violated** |" in report
    assert json.loads((tmp_path / "report.json").read_text())[0]["id"] == results[0]["id"]
    assert main(["--out", str(tmp_path), "--only", "zeta-values", "fig3-variance"]) == 0
    assert "holds" in capsys.readouterr().out
    cached = json.loads((tmp_path / "report.json").read_text())
    assert [r["id"] for r in cached] == ["zeta-values", "fig3-variance"] and all(r["cached"] for r in cached)


def test_unknown_check_is_exit_2(tmp_path, capsys) -> None:
    assert main(["--only", "fig99", "--out", str(tmp_path)]) == 2
    assert "unknown check 'fig99'" in capsys.readouterr().err
