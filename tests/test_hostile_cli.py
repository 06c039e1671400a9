"""Hostile files fed to every command that reads one: each gets exit 2 and
one ``topocoll: error:`` line naming the problem, never a traceback, an
internal error, a hang or exit 0.  The classes are the ones outside users
found (issue 15): bytes that are not UTF-8, UTF-16, NUL bytes, nesting
100,000 deep, numbers of 5,000 digits, huge ranges, rates past any link,
empty and binary files, a directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from topocoll._core import limit
from topocoll.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "topologies"

TOPOLOGIES = {
    "slurm-not-utf8.conf": b"SwitchName=s\xff0 Nodes=n[0-3]\n",
    "slurm-nul.conf": b"SwitchName=s0 Nodes=n[0-1]\n\0SwitchName=s1 Nodes=m[0-1]\n",
    "slurm-5000-digits.conf": b"SwitchName=s0 Nodes=n[" + b"9" * 5000 + b"]\n",
    "slurm-long-max.conf": b"SwitchName=s0 Nodes=n[9223372036854775807],m0\n",
    "slurm-ten-million.conf": b"SwitchName=s0 Nodes=n[0-9999999]\n",
    "slurm-inf-rate.conf": b"SwitchName=s0 Nodes=n[0-1] LinkSpeed=1e308\n",
    "slurm-hex-rate.conf": b"SwitchName=s0 Nodes=n[0-1] LinkSpeed=0x10\n",
    "slurm-binary.conf": bytes(range(256)) * 4,
    "slurm-cycle.conf": b"SwitchName=s0 Nodes=n0 Switches=s1\nSwitchName=s1 Nodes=n1 Switches=s0\n",
    "slurm-long-name.conf": b"SwitchName=s0 Nodes=" + b"n" * 400 + b"\n",
    "empty.yaml": b"",
    "yaml-deep.yaml": b"a: " + b"[" * 100000,
    "yaml-deep-block.yaml": b"".join(b"  " * i + b"k:\n" for i in range(3000)),
    "yaml-utf16.yaml": "switches:\n  - name: s0\n    machines: n[0-1]\n".encode("utf-16"),
    "yaml-not-utf8.yaml": b"switches:\n  - name: s\xff0\n    machines: n[0-1]\n",
    "yaml-nul-name.yaml": b'name: "s0\\0junk"\nswitches:\n  - name: s0\n    machines: n[0-1]\n',
    "yaml-5000-digit-slots.yaml": b"switches:\n  - name: s0\n    machines: n[0-1]\nmachines:\n  n0: {slots: "
                                  + b"9" * 5000 + b"}\n",
    "yaml-inf-bandwidth.yaml": b"bandwidth: 1e300Tbit\nswitches:\n  - name: s0\n    machines: n[0-1]\n",
    "yaml-alias.yaml": b"switches:\n  - &x {name: s0, machines: n0}\n  - *x\n",
    "yaml-not-a-map.yaml": b"- 1\n- 2\n",
    "yaml-many-tree.yaml": b"switches:\n  - name: s0\n    machines: r[0-999]n[0-999]\n",
}

SPECS = ["1000000", "tree:1000000,1000000", "tree:" + ",".join(["2"] * 32), "chain:" + "9" * 5000]


def commands(path: str) -> dict[str, list[str]]:
    """Every command that reads a topology, with what else it needs."""
    return {
        "topology show": ["topology", "show", path],
        "topology convert": ["topology", "convert", path, "--to", "yaml"],
        "plan": ["plan", path, "--check"],
        "verify": ["verify", path, str(EXAMPLES / "figure1.yaml")],
        "generate": ["generate", path, "-o", "/dev/null"],
        "simgrid platform": ["simgrid", "platform", path, "-o", "/dev/null"],
        "bench": ["bench", path, "--backend", "simgrid", "--sizes", "1K", "--repetitions", "1"],
    }


def refused(capsys, argv) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, code, err[-500:])
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    assert err.startswith("topocoll: error: ") and err.count("\n") == 1, err[-500:]
    return err


@pytest.mark.parametrize("command", list(commands("x")))
@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_hostile_topology_file(tmp_path, capsys, name, command):
    path = tmp_path / name
    path.write_bytes(TOPOLOGIES[name])
    err = refused(capsys, commands(str(path))[command])
    assert name in err or "limit" in err, err   # the file (and line) named, or the limit


@pytest.mark.parametrize("command", ["topology show", "plan", "generate"])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s[:24])
def test_hostile_spec(capsys, spec, command):
    err = refused(capsys, commands(spec)[command])
    assert "limit" in err or "expected numbers" in err, err


@pytest.mark.parametrize("command", ["topology show", "plan"])
def test_directory_as_topology(tmp_path, capsys, command):
    refused(capsys, commands(str(tmp_path))[command])


def good_schedule(tmp_path, capsys) -> dict:
    f = tmp_path / "good.json"
    assert main(["plan", str(EXAMPLES / "figure1.yaml"), "-o", str(f)]) == 0
    capsys.readouterr()
    return json.loads(f.read_text())


SCHEDULES = {
    "not-utf8": lambda d: json.dumps(d).replace("faraj", "fa\udcffraj").encode("utf-8", "surrogateescape"),
    "utf16": lambda d: json.dumps(d).encode("utf-16"),
    "utf16-no-bom": lambda d: json.dumps(d).encode("utf-16-le"),
    "deep": lambda d: b'{"x": ' + b"[" * 100000 + b"]" * 100000 + b"}",
    "5000-digits": lambda d: json.dumps(d).replace("[0, ", "[" + "9" * 5000 + ", ", 1).encode(),
    "bools": lambda d: json.dumps(d).replace("[0, ", "[false, ", 1).encode(),
    "float": lambda d: json.dumps(d).replace("[0, ", "[0.0, ", 1).encode(),
    "nul": lambda d: json.dumps(d).replace("faraj", "fa\\u0000raj").encode(),
    "trailing": lambda d: json.dumps(d).encode() + b"}",
    "truncated": lambda d: json.dumps(d).encode()[:-40],
    "empty": lambda d: b"",
    "binary": lambda d: bytes(range(256)),
    "not-an-object": lambda d: b"[1, 2]",
    "duplicate-key": lambda d: json.dumps(d).replace('"phases"', '"phases": [], "phases"', 1).encode(),
    "bad-sync": lambda d: json.dumps(dict(d, syncs=[{"from": 0, "to": 1, "after": [0, 0], "before": [1, 2]}])).encode(),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_hostile_schedule(tmp_path, capsys, name):
    f = tmp_path / f"{name}.json"
    f.write_bytes(SCHEDULES[name](good_schedule(tmp_path, capsys)))
    err = refused(capsys, ["verify", str(EXAMPLES / "figure1.yaml"), str(f)])
    assert f"{name}.json" in err, err


def test_trailing_empty_phases_are_counted(tmp_path, capsys):
    """A correct 3-phase schedule plus empty phases is not optimal: every
    phase of the file counts, the last ones too."""
    doc = good_schedule(tmp_path, capsys)
    phases = len(doc["phases"])
    for extra in (1, 2000):
        f = tmp_path / f"extra{extra}.json"
        f.write_text(json.dumps(dict(doc, phases=doc["phases"] + [[]] * extra)))
        code = main(["verify", str(EXAMPLES / "figure1.yaml"), str(f), "--json"])
        rep = json.loads(capsys.readouterr().out)
        assert code == 1 and rep["phases"] == phases + extra and not rep["optimal"]


def test_yaml_writer_output_reads_back(tmp_path, capsys):
    """Names that mean something unquoted in YAML convert to YAML that
    topocoll reads back as the same tree."""
    conf = tmp_path / "odd.conf"
    conf.write_text("SwitchName=sw: Nodes=n[0-1] Switches=-\nSwitchName=- Nodes=true,null\n")
    y = tmp_path / "odd.yaml"
    assert main(["topology", "convert", str(conf), "-o", str(y)]) == 0
    assert main(["topology", "convert", str(y), "--to", "slurm"]) == 0
    out = capsys.readouterr().out
    assert "SwitchName=sw: Nodes=n[0-1] Switches=-" in out and "SwitchName=- Nodes=true,null" in out


def test_bare_rate_is_mbit_everywhere(capsys):
    """One unit rule: a bare number is Mbit/s in files, options and variables."""
    assert limit("bare_rate_unit") == 1e6
    assert main(["topology", "show", "4", "--bandwidth", "100", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["peak_throughput_bps"] == pytest.approx(4 * 3 * 100e6 / 3)


@pytest.mark.parametrize("sizes", [",", " , ,"])
def test_bench_without_a_size(capsys, sizes):
    """Every back-end: no size given is refused before anything runs."""
    err = refused(capsys, ["bench", "4", "--backend", "simgrid", "--sizes", sizes, "--algorithms", "linear"])
    assert "no size given" in err, err


def test_pingpong_is_not_the_packet_simulators(capsys):
    """model pingpong runs an MPI program, which the packet simulator does
    not: refused by name (it was an internal error)."""
    err = refused(capsys, ["model", "pingpong", "chain:2,2", "--backend", "packet"])
    assert "model pingpong runs an MPI program: --backend simgrid, testbed or mpirun" in err, err
