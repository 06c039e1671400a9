"""The command line, run in-process: output, files, exit codes, errors."""

import json

import pytest

from topocoll.cli import main

from .conftest import EXAMPLES

FIG1 = str(EXAMPLES / "figure1.yaml")
CHAIN = str(EXAMPLES / "c-chain.conf")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_explains(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("topology", "plan", "verify", "algorithms", "config", "demo"):
        assert cmd in out


def test_show_json(capsys):
    code, out, _ = run(capsys, "topology", "show", CHAIN, "--json")
    info = json.loads(out)
    assert code == 0
    assert info["load"] == 256 and len(info["machines"]) == 32
    assert info["bottleneck_links"] == [{"link": "s2-s1", "machines_each_side": [16, 16]}]
    assert info["peak_throughput_bps"] == pytest.approx(32 * 31 * 100e6 / 256)
    assert sorted(len(s["machines"]) for s in info["subtrees"]) == [1] * 8 + [8, 16]


def test_show_text(capsys):
    code, out, _ = run(capsys, "topology", "show", FIG1)
    assert code == 0
    assert "load 9" in out and "root: s1" in out and "333.3 Mbit/s" in out


def test_plan_writes_schedule_json(capsys, tmp_path):
    out_file = tmp_path / "s.json"
    code, _, err = run(capsys, "plan", FIG1, "-o", str(out_file))
    assert code == 0 and "9 phases" in err
    doc = json.loads(out_file.read_text())
    assert doc["format"] == "topocoll-schedule/1" and doc["algorithm"] == "faraj-yuan"
    assert doc["machines"] == ["n0", "n1", "n2", "n3", "n4", "n5"]
    assert len(doc["phases"]) == 9
    assert sum(len(p) for p in doc["phases"]) == 30
    # and verify accepts it
    code, out, _ = run(capsys, "verify", FIG1, str(out_file))
    assert code == 0 and "OK" in out


def test_plan_check_json(capsys):
    code, out, _ = run(capsys, "plan", CHAIN, "--check", "--json")
    s = json.loads(out)
    assert code == 0
    assert {"phases", "load", "contention_free", "messages", "seconds"} <= set(s)
    assert s["phases"] == s["load"] == 256 and s["messages"] == 32 * 31 and s["contention_free"] is True


def test_plan_to_stdout(capsys):
    code, out, _ = run(capsys, "plan", "3")
    assert code == 0 and json.loads(out)["phases"]


def test_verify_catches_tampering(capsys, tmp_path):
    f = tmp_path / "s.json"
    run(capsys, "plan", FIG1, "-o", str(f))
    doc = json.loads(f.read_text())
    doc["phases"][0].extend(doc["phases"][1])      # two phases squeezed into one
    del doc["phases"][1]
    f.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "verify", FIG1, str(f), "--json")
    rep = json.loads(out)
    assert code == 1 and not rep["contention_free"] and "edge" in rep["problem"]


@pytest.mark.parametrize("mangle, message", [
    (lambda d: d.update(machines=d["machines"][::-1]), "rank 0 is 'n5' in the schedule but 'n0'"),
    (lambda d: d.update(machines=d["machines"][:5]), "5 machines, the topology 6"),
    (lambda d: d["phases"][0].append([0, 99]), "phase 0: [0, 99]"),
    (lambda d: d.update(format="other"), "not a schedule"),
])
def test_verify_rejects_mismatch(capsys, tmp_path, mangle, message):
    f = tmp_path / "s.json"
    run(capsys, "plan", FIG1, "-o", str(f))
    doc = json.loads(f.read_text())
    mangle(doc)
    f.write_text(json.dumps(doc))
    code, _, err = run(capsys, "verify", FIG1, str(f))
    assert code == 2 and message in err


def test_verify_not_json(capsys, tmp_path):
    f = tmp_path / "s.json"
    f.write_text("{\n oops")
    code, _, err = run(capsys, "verify", FIG1, str(f))
    assert code == 2 and "s.json:2:2: not JSON" in err


def test_convert_round_trip(capsys, tmp_path):
    y = tmp_path / "c.yaml"
    c = tmp_path / "c.conf"
    assert run(capsys, "topology", "convert", CHAIN, "-o", str(y))[0] == 0
    assert run(capsys, "topology", "convert", str(y), "-o", str(c))[0] == 0
    assert [l for l in c.read_text().splitlines() if not l.startswith("#")] == \
           [l for l in (EXAMPLES / "c-chain.conf").read_text().splitlines() if not l.startswith("#")]


def test_errors_exit_2_with_message(capsys, tmp_path):
    bad = tmp_path / "bad.conf"
    bad.write_text("SwitchName=s0 Nodes=a Switches=s1\nSwitchName=s1 Nodes=a\n")
    code, _, err = run(capsys, "plan", str(bad), "--check")
    assert code == 2 and "bad.conf:2" in err and "not a leaf" in err
    code, _, err = run(capsys, "plan", "nothing-here.yaml")
    assert code == 2 and "cannot open" in err


def test_unknown_algorithm_lists_valid(capsys):
    with pytest.raises(SystemExit) as e:
        main(["plan", FIG1, "--algorithm", "bogus"])
    assert e.value.code == 2
    assert "faraj-yuan" in capsys.readouterr().err


def test_algorithms_and_config(capsys):
    code, out, _ = run(capsys, "algorithms", "--json")
    assert code == 0 and any(a["name"] == "faraj-yuan" and a["optimal"] for a in json.loads(out))
    code, out, _ = run(capsys, "config", "--lib")
    assert code == 0 and out.strip().endswith("libtopocoll.so")
    code, out, _ = run(capsys, "config", "--include")
    assert code == 0 and out.strip()


def test_demo(capsys, tmp_path):
    code, out, _ = run(capsys, "demo", "--sizes", "16K", "--no-testbed", "--no-packet", "--out", str(tmp_path))
    assert code == 0
    # every algorithm in SimGrid on each topology: a CSV and a figure each
    for name in ("a-single-switch", "b-star", "c-chain"):
        assert (tmp_path / f"{name}.csv").stat().st_size > 0 and (tmp_path / f"{name}.png").stat().st_size > 0
    lines = {l.split()[0]: l.split() for l in out.splitlines() if l.startswith(("a-", "b-", "c-"))}
    # machines, load and phases of the paper's three topologies
    assert lines["a-single-switch"][1:2] + lines["a-single-switch"][-5:-3] == ["24", "23", "23"]
    assert lines["c-chain"][1] == "32" and "256" in lines["c-chain"]
