"""Running MPI programs on the testbed: Open MPI's mpirun started in the first
machine's namespace, launching the other ranks through ns-agent.sh (in place
of ssh), over the TCP BTL only, with ranks yielding when idle (2 cores:
spinning ranks ruin timings)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from pathlib import Path

from .._core import TopocollError
from . import net

AGENT = Path(__file__).with_name("ns-agent.sh")
MCA = {
    "btl": "tcp,self",
    "btl_tcp_if_include": "eth0",
    "oob_tcp_if_include": "eth0",
    "mpi_yield_when_idle": "1",
    "plm_rsh_no_tree_spawn": "1",
}


# The testbed runs every machine's ranks on this host's few cores: waiting
# ranks nap instead of spinning (docs/pacing.md, "Waiting without spinning").
TESTBED_NAP = "200us"
# ... and wake late (a sync reaches its next sender a median 1.4 ms after it
# leaves, docs/results/2026-11-24-capacitated-lanes.md): the pace leads that
# cover it were measured here, so they are not capped by a share of the
# message (TOPOCOLL_PACE_LEAD_SHARE, which a cluster of ranks waking on time
# needs).
TESTBED_LEAD_SHARE = "0"


def executor_env(record: dict, env: dict) -> dict:
    """env with the testbed's variables for the executor unless given:
    TOPOCOLL_BANDWIDTH, the rate of the links the topology gives none, which
    it paces by, TOPOCOLL_NAP and TOPOCOLL_PACE_LEAD_SHARE (the ranks
    outnumber the cores)."""
    if record and record.get("rate_bps"):
        env.setdefault("TOPOCOLL_BANDWIDTH", f"{record['rate_bps']:.0f}bit")   # with its unit: a bare number is Mbit/s
    env.setdefault("TOPOCOLL_NAP", TESTBED_NAP)
    env.setdefault("TOPOCOLL_PACE_LEAD_SHARE", TESTBED_LEAD_SHARE)
    return env


@contextlib.contextmanager
def mpirun_command(record: dict, argv: list[str], env_names: list[str], np: int | None = None,
                   mca: dict | None = None, slots: dict | None = None):
    """The command line running argv on the testbed described by record, from
    its first machine's namespace; the hostfile lives as long as the context.
    slots: ranks a machine (default: the record's, else 1), filled in order."""
    machines = record["machines"]
    slots = slots or record.get("slots", {})
    params = dict(MCA, plm_rsh_agent=str(AGENT), **(mca or {}))
    with tempfile.NamedTemporaryFile("w", prefix="topocoll-hosts-", suffix=".txt") as hosts:
        hosts.write("".join(f"{m} slots={slots.get(m, 1)}\n" for m in machines))
        hosts.flush()
        cmd = ["ip", "netns", "exec", net.machine_ns(machines[0]), "unshare", "--uts", "sh", "-c",
               'hostname "$0" && exec "$@"', machines[0],
               "mpirun.openmpi", "--allow-run-as-root", "--hostfile", hosts.name, "--oversubscribe",
               "-np", str(np or len(machines))]
        for k, v in params.items():
            cmd += ["--mca", k, str(v)]
        for name in env_names:
            cmd += ["-x", name]
        yield cmd + [str(a) for a in argv]


def mca_params(items: list[str]) -> dict[str, str]:
    """Open MPI parameters given as --mca KEY=VALUE items, as a dict; an
    item without '=' or a key is refused, naming it."""
    params = {}
    for kv in items:
        key, eq, value = kv.partition("=")
        if not eq or not key:
            raise TopocollError("invalid argument", f"--mca {kv}: expected KEY=VALUE")
        params[key] = value
    return params


def run(argv: list[str], env: dict[str, str] | None = None, np: int | None = None, mca: dict | None = None,
        timeout: float | None = None, capture: bool = True) -> subprocess.CompletedProcess:
    """Run an MPI program on the testbed that is up."""
    record = net.status()
    if not record or not record.get("up"):
        raise TopocollError("invalid argument", "no testbed is up ('topocoll testbed up T' first)")
    env = executor_env(record, dict(env or {}))
    with mpirun_command(record, argv, sorted(env), np, mca) as cmd:
        return subprocess.run(cmd, env=dict(os.environ, **env), capture_output=capture, text=True, timeout=timeout)
