"""dfl-bounds on the command line: JSON keys, tables, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from bounds.cli import main

DFL = [
    "dfl",
    "--L",
    "1",
    "--sigma2",
    "1",
    "--nodes",
    "10",
    "--eta",
    "0.01",
    "--tau1",
    "4",
    "--tau2",
    "4",
    "--T",
    "1000",
    "--gap",
    "1",
]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_topology_json(capsys) -> None:
    code, out, _ = run(capsys, "topology", "ring", "--nodes", "10", "--json")
    data = json.loads(out)
    assert code == 0 and {"zeta", "rho", "beta_mix", "nodes"} <= data.keys()
    assert data["nodes"] == 10 and round(data["zeta"], 2) == 0.87 and data["beta_mix"] == pytest.approx(4 / 3)


def test_quasi_ring_table(capsys) -> None:
    code, out, _ = run(capsys, "topology", "quasi-ring", "--nodes", "10", "--weights", "metropolis")
    assert code == 0 and "zeta : 0.849555" in out


def test_user_matrix_and_edge_list(capsys, tmp_path) -> None:
    np.savetxt(tmp_path / "c.txt", np.full((4, 4), 0.25))
    code, out, _ = run(capsys, "topology", f"matrix:{tmp_path / 'c.txt'}", "--json")
    assert code == 0 and json.loads(out)["zeta"] == pytest.approx(0, abs=1e-12)
    assert json.loads(out)["weights"] == "matrix file"  # it said 'paper', a rule it never applied
    problem = [
        "--L",
        "1",
        "--sigma2",
        "1",
        "--eta",
        "0.01",
        "--tau1",
        "2",
        "--tau2",
        "2",
        "--T",
        "8",
        "--gap",
        "1",
    ]
    code, out, _ = run(
        capsys, "dfl", "--topology", f"matrix:{tmp_path / 'c.txt'}", "--nodes", "4", *problem, "--json"
    )
    assert code == 0 and json.loads(out)["weights"] == "matrix file"
    (tmp_path / "e.txt").write_text("0 1\n1 2\n2 3\n3 0\n")
    code, out, _ = run(capsys, "topology", f"edges:{tmp_path / 'e.txt'}", "--json")
    assert (
        code == 0
        and json.loads(out)["zeta"] == pytest.approx(1 / 3)
        and json.loads(out)["weights"] == "paper"
    )


def test_dfl_json_keys_and_values(capsys) -> None:
    code, out, _ = run(capsys, *DFL, "--zeta", "0.87", "--json")
    data = json.loads(out)
    keys = {
        "bound",
        "sync_sgd_term",
        "local_drift_term",
        "limit_T_inf",
        "eta_condition_lhs",
        "eta_condition_ok",
        "eta_max",
    }
    assert code == 0 and keys <= data.keys()
    assert data["bound"] == pytest.approx(data["sync_sgd_term"] + data["local_drift_term"])
    assert data["sync_sgd_term"] == pytest.approx(0.201) and data["eta_condition_ok"] is True


def test_dfl_json_reports_the_repaired_bound(capsys) -> None:
    """bound_repaired = 2 gap / (eta K tau1) + eta L sigma^2 / N
    + 2 eta^2 L^2 sigma^2 (tau1 q / (1 - q) + (tau1 - 1) / 2), q = zeta^(2 tau2), by hand."""
    code, out, _ = run(capsys, *DFL, "--zeta", "0.87", "--json")
    data = json.loads(out)
    q = 0.87**8
    by_hand = 2 / (0.01 * 125 * 4) + 0.01 / 10 + 2e-4 * (4 * q / (1 - q) + 1.5)  # K = 1000 / 8 = 125
    assert code == 0 and data["bound_repaired"] == pytest.approx(by_hand, rel=1e-12)


def test_eta_max_passes_its_own_condition(capsys) -> None:
    """tau1 = 1, tau2 = 9, zeta = 0: eta = 0.1 = eta_max; the left side is 1 up to rounding."""
    argv = ["dfl", "--L", "1", "--sigma2", "0", "--nodes", "10", "--tau1", "1", "--tau2", "9"]
    code, out, _ = run(capsys, *argv, "--zeta", "0", "--T", "100", "--gap", "1", "--eta", "0.1", "--json")
    data = json.loads(out)
    assert code == 0 and data["eta_max"] == pytest.approx(0.1) and data["eta_condition_ok"] is True
    assert data["message"] == ""
    code, out, _ = run(capsys, *argv, "--zeta", "0", "--T", "100", "--gap", "1", "--eta", "0.1001", "--json")
    data = json.loads(out)
    assert data["eta_condition_ok"] is False and "relative tolerance" in data["message"]


def test_dfl_from_topology(capsys) -> None:
    code, out, _ = run(capsys, *DFL, "--topology", "ring", "--json")
    data = json.loads(out)
    assert code == 0 and data["zeta"] == pytest.approx(1 / 3 + 2 / 3 * math.cos(math.pi / 5))


def test_dfl_disconnected_is_infinite_not_an_error(capsys) -> None:
    code, out, _ = run(capsys, *DFL, "--zeta", "1", "--json")
    data = json.loads(out)
    assert code == 0 and data["bound"] == "inf" and "disconnected" in data["message"]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["topology", "moebius", "--nodes", "10"], "unknown topology 'moebius'"),
        (["topology", "ring"], "--nodes is required"),
        (["topology", "quasi-ring", "--nodes", "10"], "weight rule 'paper'"),
        ([*DFL, "--zeta", "1.5"], "zeta = 1.5 is out of range"),
        ([*DFL[:-2], "--gap", "-1", "--zeta", "0.5"], "gap = -1 is out of range"),
        (DFL, "one of the arguments --zeta --topology is required"),
        ([*DFL, "--zeta", "abc"], "argument --zeta: invalid float value: 'abc'"),
        ([*DFL, "--topology", "matrix:{four}"], "--nodes 10 but topology 'matrix:"),
        ([*DFL, "--topology", "matrix:/no/such.npy"], "matrix file '/no/such.npy' does not exist"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, tmp_path, argv: list[str], fragment: str) -> None:
    np.savetxt(tmp_path / "four.txt", np.full((4, 4), 0.25))
    argv = [a.format(four=tmp_path / "four.txt") for a in argv]
    with pytest.raises(SystemExit) as exc:
        code = main(argv)
        raise SystemExit(code)
    _, err = capsys.readouterr()
    assert exc.value.code == 2
    assert len(err.strip().splitlines()) == 1 and fragment in err


def test_expr_latex(capsys) -> None:
    code, out, _ = run(capsys, "expr", "local_drift_term", "--latex")
    assert code == 0 and out.startswith("2 L^{2}")


def test_expr_json_gives_the_exact_expression_back(capsys) -> None:
    """Every other command took --json; expr refused it (a probe). Its srepr is the expression itself."""
    import sympy

    from bounds.dfl import symbolic

    code, out, _ = run(capsys, "expr", "bound_non_iid", "--json")
    got = json.loads(out)
    assert code == 0 and sympy.sympify(got["srepr"]) == symbolic.expression("bound_non_iid")
    assert got["latex"] == symbolic.latex("bound_non_iid") and "varsigma^2" in got["symbols"]
    code, _, err = run(capsys, "expr", "bound_repaired", "--json", "--latex")
    assert code == 2 and "--latex has no effect with --json" in err


def test_module_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bounds", "topology", "ring", "--nodes", "10", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(proc.stdout)["nodes"] == 10


OPT = [
    "optimize",
    "--L",
    "1",
    "--sigma2",
    "1",
    "--nodes",
    "10",
    "--gap",
    "1",
    "--t-comp",
    "1",
    "--max-tau1",
    "10",
    "--max-tau2",
    "10",
]


def test_optimize_json_keys_and_agreement_with_python(capsys) -> None:
    from bounds import CostModel, optimize_dfl

    code, out, _ = run(
        capsys, *OPT, "--zeta", "0.87", "--t-comm", "0.5", "--budget-seconds", "1000", "--json"
    )
    data = json.loads(out)
    assert code == 0 and {"tau1", "tau2", "eta", "bound", "rounds", "time"} <= data.keys()
    r = optimize_dfl(
        L=1,
        sigma2=1,
        N=10,
        gap=1,
        zeta=0.87,
        cost=CostModel(1, 0.5),
        budget_seconds=1000,
        max_tau1=10,
        max_tau2=10,
    )
    assert (data["tau1"], data["tau2"], data["rounds"]) == (r.tau1, r.tau2, r.rounds)
    assert data["bound"] == pytest.approx(r.bound)
    assert data["bound_used"] == "repaired" and "refuted" not in data["message"]
    code, out, _ = run(
        capsys,
        *OPT,
        "--zeta",
        "0.87",
        "--t-comm",
        "0.5",
        "--budget-seconds",
        "1000",
        "--bound",
        "paper",
        "--json",
    )
    paper = json.loads(out)
    assert paper["bound_used"] == "paper" and "refuted" in paper["message"]


def test_optimize_with_network_cost_and_topology(capsys) -> None:
    code, out, _ = run(
        capsys,
        *OPT,
        "--topology",
        "ring",
        "--latency",
        "0.01",
        "--bandwidth",
        "1e6",
        "--dim",
        "10000",
        "--max-local-steps",
        "500",
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and data["t_comm"] == pytest.approx(0.01 + 0.32) and data["rounds"] * data["tau1"] <= 500


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--zeta", "0.87", "--t-comm", "0.5", "--budget-seconds", "1"], "the budget fits no round"),
        (["--zeta", "0.87", "--budget-seconds", "10"], "the gossip cost is missing"),
        (["--zeta", "0.87", "--t-comm", "0.5"], "no budget given"),
        (
            ["--zeta", "0.87", "--t-comm", "0.5", "--budget-seconds", "10", "--compressor", "top_k"],
            "Proposition 1 assumes exact gossip",
        ),
    ],
)
def test_optimize_errors(capsys, extra: list[str], fragment: str) -> None:
    code, _, err = run(capsys, *OPT, *extra)
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err


CDFL = [
    "cdfl",
    "--L",
    "1",
    "--mu",
    "0.1",
    "--sigma2",
    "1",
    "--G2",
    "1",
    "--nodes",
    "10",
    "--tau1",
    "4",
    "--tau2",
    "4",
    "--K",
    "1000",
]


def test_cdfl_json_keys_and_compressor_delta(capsys) -> None:
    code, out, _ = run(
        capsys,
        *CDFL,
        "--topology",
        "ring",
        "--compressor",
        "top_k",
        "--compressor-param",
        "89",
        "--dim",
        "100",
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and {"bound", "terms", "p", "gamma", "conditions_ok"} <= data.keys()
    assert data["delta"] == pytest.approx(0.89) and {"D1", "D2", "D3"} <= data["terms"].keys()
    assert data["bits_per_message"] == 89 * (32 + 7)


def test_compare_rows(capsys) -> None:
    code, out, _ = run(capsys, *DFL, "--zeta", "0.87", "--json")
    code, out, _ = run(
        capsys,
        "compare",
        *DFL[1:],
        "--zeta",
        "0.87",
        "--beta",
        "1.33",
        "--mu",
        "0.1",
        "--G2",
        "1",
        "--delta",
        "0.5",
        "--json",
    )
    rows = json.loads(out)["rows"]
    assert code == 0 and [r["method"] for r in rows] == [
        "DFL",
        "C-SGD",
        "D-SGD",
        "local SGD",
        "synchronous SGD",
        "C-DFL",
    ]
    assert rows[1]["tau2"] == 1 and rows[2]["tau1"] == rows[2]["tau2"] == 1 and rows[3]["zeta"] == 0
    assert "not comparable" in rows[5]["note"]


TOP_K_50 = ("--compressor", "top_k", "--compressor-param", "50", "--dim", "100")


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--zeta", "0.87", "--delta", "0.5"], "beta = ||I - C||_2 is missing"),
        (["--zeta", "0.87", "--beta", "1.3"], "the compression ratio is missing"),
        (
            ["--zeta", "0.87", "--beta", "1.3", "--compressor", "qsgd", "--compressor-param", "4"],
            "needs --dim",
        ),
        (["--zeta", "1.0", "--beta", "1.3", "--delta", "0.5"], "zeta = 1 is out of range"),
        (
            ["--topology", "ring", "--compressor", "top_k", "--compressor-param", "200", "--dim", "100"],
            "k = 200 exceeds the dimension d = 100",
        ),
        (
            ["--topology", "ring", "--beta", "5", "--delta", "0.5"],
            "--beta 5 and --topology: the topology gives",
        ),
        (
            ["--zeta", "0.87", "--beta", "1.3", "--delta", "0.89", *TOP_K_50],
            "--delta 0.89 and --compressor: the compressor gives delta",
        ),
    ],
)
def test_cdfl_errors(capsys, extra: list[str], fragment: str) -> None:
    code, _, err = run(capsys, *CDFL, *extra)
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err


def test_a_closed_pipe_ends_quietly_with_sigpipe_status() -> None:
    """`dfl-bounds ... | head` used to end in a BrokenPipeError traceback."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-m", "bounds", "topology", "ring", "--nodes", "10"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    child.stdout.close()  # the reader is gone before the child (a second of imports) prints
    _, err = child.communicate(timeout=120)
    assert child.returncode == 141 and err == b""


def test_ctrl_c_anywhere_in_a_cli_is_one_line_and_status_130(tmp_path, capsys, monkeypatch) -> None:
    """Ctrl-C during dfl-check's start-up or while dfl-plot drew printed a KeyboardInterrupt traceback from
    torch or matplotlib (a probe); dfl-sim said 'dfl-sim: interrupted' at the same moments."""
    import paper_checks.report
    import plots.cli as plot_cli
    from paper_checks.cli import main as check_main

    def stop(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(paper_checks.report, "select", stop)
    monkeypatch.setattr(plot_cli, "read_metrics", stop)
    for main_, argv, prog in ((check_main, ["--only", "zeta-values", "--out", str(tmp_path)], "dfl-check"),
                              (plot_cli.main, [str(tmp_path)], "dfl-plot")):  # fmt: skip
        assert main_(argv) == 130
        assert capsys.readouterr().err == f"{prog}: interrupted\n"


def test_optimize_refuses_two_gossip_costs(capsys) -> None:
    """--t-comm used to win silently over --latency / --bandwidth."""
    problem = ("--L", "1", "--sigma2", "1", "--nodes", "10", "--gap", "1", "--zeta", "0.87", "--t-comp", "1")
    costs = ("--t-comm", "0.5", "--latency", "0.1", "--bandwidth", "1e6", "--dim", "100")
    code, _, err = run(capsys, "optimize", *problem, *costs, "--budget-seconds", "100")
    assert code == 2 and "--t-comm and --latency/--bandwidth both give the gossip cost" in err


DFL_PROBLEM = "--L 1 --sigma2 1 --nodes 10 --eta 0.01 --tau1 4 --T 1000 --gap 1"
OPT_PROBLEM = (
    "optimize --L 1 --sigma2 1 --nodes 10 --gap 1 --t-comp 1 --t-comm 0.5 --zeta 0.8 --budget-seconds 100"
)
CDFL_PROBLEM = "--L 1 --mu 0.1 --sigma2 1 --G2 1 --nodes 10 --zeta 0.87 --beta 1.3"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [  # each was accepted and dropped in silence (exit 0)
        (f"compare {DFL_PROBLEM} --tau2 4 --zeta 0.8 --delta 7",
         "--delta 7.0 has no effect: only the C-DFL row reads it, which needs --mu"),
        (f"{OPT_PROBLEM} --beta -5", "--beta -5.0 has no effect: only --bound cdfl"),
        (f"{OPT_PROBLEM} --dim -4", "--dim -4 has no effect: --t-comm gives"),
        (f"dfl {DFL_PROBLEM} --tau2 4 --zeta 0.8 --weights metropolis",
         "--weights metropolis has no effect: --zeta gives zeta itself"),
        (f"dfl {DFL_PROBLEM} --tau2 4 --topology ring --seed 3", "--seed 3 has no effect: only erdos-renyi"),
        ("topology matrix:C.txt --weights metropolis", "a matrix:PATH gives C itself"),
        (f"dfl {DFL_PROBLEM} --tau2 4 --zeta 0.5 --nodes 1", "--zeta 0.5 with --nodes 1 (expected --zeta 0"),
        (f"cdfl {CDFL_PROBLEM} --tau1 4 --tau2 4 --K 100 --delta 0.5 --dim 9",
         "--dim 9 has no effect: only --compressor reads it"),
        (f"optimize --bound cdfl {CDFL_PROBLEM} --dim 1000 --t-comp 0.01 --latency 0.001 --bandwidth 1e6 "
         "--budget-seconds 60 --gap 1 --t-comm 0.5", "--t-comm 0.5 has no effect: --bound cdfl prices"),
    ],
)  # fmt: skip
def test_flags_without_effect_are_refused(capsys, argv: str, fragment: str) -> None:
    code, _, err = run(capsys, *argv.split())
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_compare_at_zeta_one_gives_no_synchronous_sgd_limit(capsys) -> None:
    """zeta = 1: the DFL row was inf, the 'synchronous SGD' row (tau2 -> infinity) a finite 0.201, as if
    gossip mixed (a probe): with zeta^tau2 = 1 the limit is no synchronous SGD."""
    from bounds.plan.compare import compare_methods

    problem = {"L": 1, "sigma2": 1, "N": 10, "eta": 0.01, "tau1": 2, "tau2": 2, "T": 1000, "gap": 1}
    sync = compare_methods(**problem, zeta=1.0)[-1]
    assert sync["method"] == "synchronous SGD" and sync["bound"] == "inf"  # (jsonable: inf as a string)
    assert sync["note"].startswith("zeta = 1: gossip never mixes the models")
    mixing = compare_methods(**problem, zeta=0.99)[-1]
    assert mixing["bound"] == pytest.approx(0.201, abs=1e-3) and "refuted" in mixing["note"]


def test_tau2_zero_is_said_in_compare_and_cdfl(capsys) -> None:
    """compare's local-SGD row was computed at tau2 = 1 without a note; cdfl at tau2 = 0 printed a negative
    order term and no reason."""
    code, out, _ = run(capsys, "compare", *DFL_PROBLEM.split(), "--tau2", "0", "--zeta", "0.8", "--json")
    local = next(r for r in json.loads(out)["rows"] if r["method"] == "local SGD")
    assert code == 0 and local["tau2"] == 1 and local["note"].startswith("tau2 = 1 (local SGD averages once")
    argv = f"cdfl {CDFL_PROBLEM} --tau1 4 --tau2 0 --K 100 --delta 0.5 --json"
    code, out, _ = run(capsys, *argv.split())
    data = json.loads(out)
    assert code == 0 and not data["success"] and data["message"].startswith("tau2 = 0: no gossip step")
    assert data["order_terms"]["second"] == "inf"


def test_a_step_count_beyond_2_53_is_refused_exactly_and_huge_values_read_short(capsys) -> None:
    """--T was read as a float, so 2^53 + 1 became 2^53 and passed (tail_steps 0 instead of 1); a value of
    1e308 was printed as a 309-digit integer."""
    base = f"dfl {DFL_PROBLEM} --tau2 4 --zeta 0.8".split()
    argv = [*base, "--T", str(2**53 + 1)]
    code, _, err = run(capsys, *argv)
    assert code == 2 and f"T = {2**53 + 1} is too large" in err
    code, _, err = run(capsys, *base, "--T", str(10**23))  # past int64: numpy holds it as an object
    assert code == 2 and "T = 1e+23 is too large" in err
    code, out, _ = run(capsys, *base, "--T", str(2**53), "--json")
    assert code == 0 and json.loads(out)["rounds"] == 2**53 // 8
    code, _, err = run(capsys, *[a if a != "0.8" else "1e308" for a in base])
    assert code == 2 and "zeta = 1e+308 is out of range" in err
    with pytest.raises(SystemExit) as stop:
        main([*base, "--T", "abc"])
    assert stop.value.code == 2 and "argument --T: invalid number value: 'abc'" in capsys.readouterr().err


def test_progress_bars_write_a_line_every_10_s_off_a_terminal(monkeypatch) -> None:
    """tqdm's default 0.1 s wrote 118 lines of a 37 s sweep into a log file; dfl-sim run writes one every
    10 s there, and so do the bars of sweep, plan and dfl-check now."""
    import io

    from bounds.cli_tools import LOG_LINE_SECONDS, bar_interval

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert bar_interval() == LOG_LINE_SECONDS == 10.0

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    assert bar_interval() == 0.1


def test_dfl_bounds_of_a_large_topology_compute_zeta_alone_and_print_it_in_full(capsys) -> None:
    """dfl / optimize with --topology took the whole spectrum (lambda_N by Lanczos: minutes on a 10^5 ring)
    where a DFL bound needs zeta alone, as `topology` computes it above 5,000 nodes; and 'zeta : 1' was
    printed for a zeta of 0.99999... (a probe's findings)."""
    from bounds import make_graph, mixing_matrix, spectral_summary

    n = 6000
    flags = ["--topology", "ring", "--nodes", str(n), "--L", "1", "--sigma2", "1", "--eta", "0.01", "--tau1",
             "4", "--tau2", "4", "--T", "1000", "--gap", "1"]  # fmt: skip
    code, out, _ = run(capsys, "dfl", *flags, "--json")
    got = json.loads(out)
    assert code == 0 and "beta_mix" not in got and got["topology"] == "ring"
    assert got["zeta"] == pytest.approx(spectral_summary(mixing_matrix(make_graph("ring", n))).zeta, abs=1e-9)
    code, text, _ = run(capsys, "dfl", *flags)
    assert code == 0 and f"zeta : {got['zeta']:.12g}" in text and "zeta : 1\n" not in text
    cost = ["--t-comp", "1", "--t-comm", "0.5", "--budget-seconds", "1000", "--max-tau1", "4", "--max-tau2",
            "4", "--L", "1", "--sigma2", "1", "--gap", "1", "--json"]  # fmt: skip
    code, out, _ = run(capsys, "optimize", *flags[:4], *cost)
    got = json.loads(out)
    assert code == 0 and "beta_mix" not in got and got["zeta"] == pytest.approx(spectral_summary(
        mixing_matrix(make_graph("ring", n))).zeta, abs=1e-9)  # fmt: skip
    code, out, _ = run(capsys, "topology", "ring", "--nodes", "10", "--json")  # small: the whole spectrum
    assert code == 0 and "beta_mix" in json.loads(out)


def test_cdfl_names_the_compressors_parameter(capsys) -> None:
    """Two runs of other --compressor-param differed only in their numbers (a probe's finding)."""
    flags = ["cdfl", "--L", "1", "--mu", "0.1", "--sigma2", "1", "--G2", "1", "--nodes", "10", "--tau1", "4",
             "--tau2", "4", "--K", "1000", "--zeta", "0.8727", "--beta", "1.3333", "--dim", "100",
             "--json"]  # fmt: skip
    code, out, _ = run(capsys, *flags, "--compressor", "qsgd", "--compressor-param", "3")
    got = json.loads(out)
    assert code == 0 and (got["compressor"], got["compressor_param"], got["bits_per_message"]) == (
        "qsgd",
        3,
        332,
    )


def test_tables_print_in_full_a_value_six_digits_would_show_as_minus_1_0_1_or_2() -> None:
    """zeta 0.9999999987 printed 'zeta : 1' (a disconnected graph's), lambda_N -0.99999998 '-1' (a periodic
    C's), beta_mix 1.99999998 '2'; other values keep 6 significant digits."""
    from bounds.cli_tools import text

    assert [text(v) for v in (0.9999999987, -0.99999998, 1.99999998, 1e-13)] == [
        "0.9999999987", "-0.99999998", "1.99999998", "1e-13"
    ]  # fmt: skip
    assert [text(v) for v in (1.0, 0.0, -1.0, 10341812.3, 0.8726779962, 3)] == [
        "1", "0", "-1", "1.03418e+07", "0.872678", "3"
    ]  # fmt: skip


def test_ctrl_c_while_a_cli_loads_is_one_line_too(monkeypatch, capsys) -> None:
    """The console scripts' modules imported their command at once (dfl-plot pandas and matplotlib, 0.8 s;
    dfl-bounds scipy, 0.65 s), so a Ctrl-C then was a KeyboardInterrupt traceback (a review). Each
    ``__main__`` now imports nothing of its command: bounds.cli_tools.entry loads it inside the one line."""
    import subprocess
    import sys

    import bounds.cli_tools

    for package, command in (("bounds", "bounds.cli"), ("sim", "sim.cli"), ("plots", "plots.cli"),
                             ("paper_checks", "paper_checks.cli")):  # fmt: skip
        probe = (f"import sys, {package}.__main__; "
                 f"print(sorted(m for m in ('{command}', 'pandas', 'matplotlib', 'scipy', 'torch', 'sympy') "
                 "if m in sys.modules))")  # fmt: skip
        loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        assert loaded.stdout.strip() == "[]", (package, loaded.stdout, loaded.stderr)

    def interrupted(name: str) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(bounds.cli_tools.importlib, "import_module", interrupted)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # (entry silences KeyboardInterrupt's: restored)
    from plots.__main__ import main as plot_main

    with pytest.raises(KeyboardInterrupt):  # out of the console script: the process then ends by SIGINT
        plot_main(["x"])
    assert capsys.readouterr().err == "dfl-plot: interrupted\n"
