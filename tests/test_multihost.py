"""torchrun across two "hosts": network namespaces joined by a veth pair, each with its own address.

The README's multi-machine command, run as two torchrun agents (node ranks 0 and 1, static
rendezvous at host A's address), must give the result of one process. Skipped, with the reason,
where namespaces cannot be made (not root, no ``ip``, a sandbox without the capability).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim.runner import RunConfig, run

ROOT = Path(__file__).resolve().parents[1]
HOSTS = (("a", "10.78.0.1"), ("b", "10.78.0.2"))


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)


@pytest.fixture
def two_hosts():
    """Two namespaces dflk<pid>a / dflk<pid>b with 10.78.0.1 and 10.78.0.2 on a veth pair; removed after."""
    if shutil.which("ip") is None or os.geteuid() != 0:
        pytest.skip("network namespaces need root and iproute2's ip")
    tag = f"dflk{os.getpid() % 100000}"
    names = [f"{tag}{h}" for h, _ in HOSTS]
    steps = [
        ("netns", "add", names[0]),
        ("netns", "add", names[1]),
        ("link", "add", f"{tag}va", "type", "veth", "peer", "name", f"{tag}vb"),
        ("link", "set", f"{tag}va", "netns", names[0]),
        ("link", "set", f"{tag}vb", "netns", names[1]),
    ]
    for (h, addr), name in zip(HOSTS, names, strict=True):
        steps += [
            ("-n", name, "addr", "add", f"{addr}/24", "dev", f"{tag}v{h}"),
            ("-n", name, "link", "set", f"{tag}v{h}", "up"),
            ("-n", name, "link", "set", "lo", "up"),
        ]
    try:
        for step in steps:
            done = _ip(*step)
            if done.returncode != 0:
                pytest.skip(
                    f"cannot make network namespaces here: ip {' '.join(step)}: {done.stderr.strip()}"
                )
        yield [(name, f"{tag}v{h}", addr) for (h, addr), name in zip(HOSTS, names, strict=True)]
    finally:
        for name in names:
            _ip("netns", "delete", name)


def test_torchrun_across_two_hosts_equals_one_process(two_hosts, tiny, tmp_path) -> None:
    flags = dict(dataset=f"npz:{tiny}", model="logreg", nodes=6, steps=40, log_every=8, eval_samples=30,
                 batch_size=8, partition="iid", eta=0.1, save_params=True)  # fmt: skip
    one = run(RunConfig(**flags, out=str(tmp_path / "one")))
    argv = [f"--{k.replace('_', '-')}" + ("" if v is True else f"={v}") for k, v in flags.items()]
    argv += ["--backend", "distributed", "--world-size", "2", "--out", str(tmp_path / "two"), "--json"]
    master = two_hosts[0][2]
    procs = []
    for rank, (ns, iface, _) in enumerate(two_hosts):
        env = {**os.environ, "GLOO_SOCKET_IFNAME": iface, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
        cmd = ["ip", "netns", "exec", ns, sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
               "--nproc-per-node", "1", "--node-rank", str(rank), "--master-addr", master, "--master-port",
               "29533", "-m", "sim", "run", *argv]  # fmt: skip
        procs.append(
            subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    summary = json.loads(outs[0][0].strip().splitlines()[-1])
    assert summary["world_size"] == 2 and summary["bytes_on_wire_per_gossip_step"] == 432.0
    a, b = np.load(tmp_path / "one" / "params.npz"), np.load(tmp_path / "two" / "params.npz")
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a.files) < 1e-5
    assert summary["final_train_loss"] == pytest.approx(one["final_train_loss"], rel=1e-5)
