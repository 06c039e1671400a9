"""The SimGrid back-end: platform generation, the data-integrity program under
smpirun with the PMPI code linked in as a static archive, and a short bench."""

import csv
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from topocoll import Topology
from topocoll.bench.platform import hostfile, platform_xml
from topocoll.cli import main

from .conftest import ALGORITHMS, EXAMPLES
from .mpi_util import BUILD


def test_platform_follows_the_tree():
    topo = Topology.parse("""
bandwidth: 1Gbit
switches:
  - {name: s0, machines: "n[0-1]", switches: [s1]}
  - {name: s1, machines: n2, uplink: {bandwidth: 10Mbit, latency: 2ms}}
""", "yaml")
    root = ET.fromstring(platform_xml(topo, 100e6, 50e-6))
    zone = root.find("zone")
    assert zone.get("routing") == "Floyd"
    assert [h.get("id") for h in zone.findall("host")] == ["n0", "n1", "n2"]
    assert sorted(r.get("id") for r in zone.findall("router")) == ["s0", "s1"]
    links = {l.get("id"): l for l in zone.findall("link")}
    assert set(links) == {"n0--s0", "n1--s0", "n2--s1", "s1--s0"}
    assert all(l.get("sharing_policy") == "SPLITDUPLEX" for l in links.values())
    assert links["s1--s0"].get("bandwidth") == "10000000bps" and links["s1--s0"].get("latency") == "2000us"
    assert links["n0--s0"].get("bandwidth") == "1000000000bps" and links["n0--s0"].get("latency") == "50us"
    # one route each way per link, up from the child, down from the parent
    routes = {(r.get("src"), r.get("dst")): r.find("link_ctn") for r in zone.findall("route")}
    assert len(routes) == 2 * len(links)
    for lid in links:
        child, parent = lid.split("--")
        assert routes[(child, parent)].get("direction") == "UP" and routes[(child, parent)].get("id") == lid
        assert routes[(parent, child)].get("direction") == "DOWN"
    assert hostfile(topo) == "n0\nn1\nn2\n"


def test_platform_defaults_apply_to_links_without_values(tmp_path, capsys):
    out = tmp_path / "p.xml"
    assert main(["simgrid", "platform", str(EXAMPLES / "c-chain.conf"), "-o", str(out), "--latency", "10us"]) == 0
    links = ET.parse(out).getroot().find("zone").findall("link")
    assert len(links) == 35 and all(l.get("bandwidth") == "100000000bps" and l.get("latency") == "10us"
                                    for l in links)
    assert (tmp_path / "p.hosts").read_text().split() == [f"n{i}" for i in range(32)]


def smpirun(np, argv, env, platform):
    import os
    full = dict(os.environ, **env)
    cmd = ["smpirun", "-platform", str(platform), "-hostfile", str(platform.with_suffix(".hosts")), "-np", str(np),
           "--cfg=smpi/simulate-computation:no", "--log=root.thres:warning"] + [str(a) for a in argv]
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def platform9(tmp_path_factory):
    path = tmp_path_factory.mktemp("sg") / "chain9.xml"
    assert main(["simgrid", "platform", "chain:3,3,3", "-o", str(path)]) == 0
    return path


@pytest.mark.parametrize("algorithm", ALGORITHMS + ["native"])
@pytest.mark.parametrize("np", range(1, 10))
def test_every_byte_under_smpirun(platform9, algorithm, np):
    """The runtime's data-integrity program, linked with libtopocoll_pmpi_smpi.a."""
    env = {"TOPOCOLL_TOPOLOGY": "chain:3,3,3", "TOPOCOLL_ALLTOALL": algorithm, "TOPOCOLL_STATS": "1",
           "TOPOCOLL_SEGMENT_SIZE": "100000", "TOPOCOLL_FANOUT": "3"}  # 256 KB blocks in 3 pieces: SimGrid slows with many flows
    proc = smpirun(np, [BUILD / "smpi" / "alltoall_check"], env, platform9)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    calls, errors = map(int, re.search(r"calls=(\d+) errors=(\d+)", proc.stdout).groups())
    assert errors == 0
    stats = dict(re.findall(r"topocoll: alltoall (\S+) calls=(\d+)", proc.stderr))
    assert stats == {algorithm: str(calls)}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_several_ranks_a_host_under_smpirun(tmp_path, algorithm):
    """Ranks share hosts unevenly and interleaved (SMPI's processor name is
    the host): every algorithm plans on machines-as-switches, every byte right."""
    platform = tmp_path / "p.xml"
    assert main(["simgrid", "platform", "chain:2,2", "-o", str(platform)]) == 0
    platform.with_suffix(".hosts").write_text("n0\nn0\nn1\nn2\nn2\nn2\nn3\nn0\n")
    env = {"TOPOCOLL_TOPOLOGY": "chain:2,2", "TOPOCOLL_ALLTOALL": algorithm, "TOPOCOLL_STATS": "1",
           "TOPOCOLL_SEGMENT_SIZE": "100000", "TOPOCOLL_VERBOSE": "1"}
    proc = smpirun(8, [BUILD / "smpi" / "alltoall_check"], env, platform)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    calls, errors = map(int, re.search(r"calls=(\d+) errors=(\d+)", proc.stdout).groups())
    assert errors == 0
    assert dict(re.findall(r"topocoll: alltoall (\S+) calls=(\d+)", proc.stderr)) == {algorithm: str(calls)}


def test_smp_bench_counts_ranks(tmp_path, capsys):
    """--ranks-per-machine: 4 machines x 2 ranks, the peak bound from the
    machine links (each carries 2 x 6 blocks a direction)."""
    csv_path = tmp_path / "s.csv"
    assert main(["bench", "4", "--ranks-per-machine", "2", "--sizes", "16K", "--repetitions", "1", "--quiet",
                 "--algorithms", "hierarchical-factor,faraj-yuan,native", "--csv", str(csv_path)]) == 0
    rows = list(csv.DictReader(csv_path.open()))
    assert {r["ranks"] for r in rows} == {"8"} and len(rows) == 3
    for r in rows:
        assert float(r["seconds"]) >= 12 * 16384 * 8 / 100e6 * 0.999, r


def test_short_bench(tmp_path, capsys):
    csv_path, png = tmp_path / "b.csv", tmp_path / "b.png"
    assert main(["bench", "chain:2,2", "--sizes", "8K,32K", "--repetitions", "2", "--quiet",
                 "--csv", str(csv_path), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    for alg in ALGORITHMS + ["native"]:
        assert alg in out
    rows = list(csv.DictReader(csv_path.open()))
    assert list(rows[0])[:7] == ["backend", "topology", "algorithm", "ranks", "msize_bytes", "repetition", "seconds"]
    assert len(rows) == (len(ALGORITHMS) + 1) * 2 * 2
    assert {r["backend"] for r in rows} == {"simgrid"} and {r["ranks"] for r in rows} == {"4"}
    # nothing beats the physical limit: 4 machines on 2 switches, load 4
    for r in rows:
        bound = 4 * int(r["msize_bytes"]) * 8 / 100e6
        assert float(r["seconds"]) >= bound * 0.999, r
    assert png.stat().st_size > 10000


def test_a_variable_the_library_refuses_is_named(capsys, monkeypatch):
    """A PMPI variable in the environment that the library refuses (its
    ranks stop at MPI_Init): bench says the library's own words, which name
    the variable, not the simulator's tail."""
    monkeypatch.setenv("TOPOCOLL_SYNC_DEPTH", "0")
    assert main(["bench", "4", "--sizes", "8K", "--repetitions", "1", "--quiet", "--algorithms", "faraj-yuan"]) == 2
    err = capsys.readouterr().err
    assert "faraj-yuan did not run: the PMPI library: TOPOCOLL_SYNC_DEPTH=0: expected a whole number" in err, err


def test_faraj_yuan_meets_the_bound_in_simulation(capsys):
    """Under the project's settings a contention-free schedule runs at its
    bottleneck link's rate: on topology (c) at 128 KB, >= 95 % of the peak."""
    assert main(["bench", str(EXAMPLES / "c-chain.conf"), "--sizes", "128K", "--repetitions", "1",
                 "--algorithms", "faraj-yuan", "--quiet"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.strip().startswith("faraj-yuan"))
    assert float(line.split()[3].rstrip("%")) >= 95.0
