"""scripts/timestamp_echoes.py's rules on hand-made captures: a stale echo
is found, explained only when every segment that could have refreshed it
carried an old ACK, and data overtaken by its own connection's later ACK is
counted."""

import importlib.util
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "timestamp_echoes", Path(__file__).resolve().parents[1] / "scripts" / "timestamp_echoes.py")
te = importlib.util.module_from_spec(spec)
spec.loader.exec_module(te)

A, B = "10.0.0.1", "10.0.0.2"


def seg(t, src, seq, ack, length, tsval, tsecr):
    """(time, src, sport, dst, dport, seq, ack, length, (TSval, TSecr), flags) as load() gives it."""
    sport, dst, dport = (1000, B, 2000) if src == A else (2000, A, 1000)
    return (t, src, sport, dst, dport, seq, ack, length, (tsval, tsecr), "A")


def capture(overtaken):
    rows = [seg(0.00, A, 0, 500, 100, 1000, 50),
            seg(0.01, B, 500, 100, 0, 60, 1000)]          # B takes A's timestamp 1000
    if overtaken:                                           # A's later pure ACK passes A's data
        rows.append(seg(0.49, A, 200, 600, 0, 1499, 60))
    rows += [seg(0.50, A, 100, 500, 100, 1498, 60),         # could refresh B's echo (seq 100 = B's ACK)
             seg(0.51, B, 500, 200, 0, 70, 1000)]          # B still echoes 1000, 0.51 s old
    return sorted(rows)


@pytest.mark.parametrize("overtaken", [False, True])
def test_stale_echo_found_and_explained_only_by_old_acks(overtaken):
    rows = capture(overtaken)
    found = te.stale_echoes(A, rows)
    assert len(found) == 1
    conn, t, age, echo = found[0]
    assert t == 0.51 and age == pytest.approx(0.51) and echo == 1000
    # the data at 0.50 would have refreshed B's echo unless its ACK (500) was older than one B had (600)
    assert te.explained(A, rows, conn, t, age, echo) is overtaken
    data, behind = te.reordered(A, rows)
    assert (data, behind) == (2, 1 if overtaken else 0)


def test_no_stale_echo_when_the_echo_moves():
    rows = [seg(0.00, A, 0, 500, 100, 1000, 50), seg(0.01, B, 500, 100, 0, 60, 1000),
            seg(0.50, A, 100, 500, 100, 1500, 60), seg(0.51, B, 500, 200, 0, 70, 1500)]
    assert te.stale_echoes(A, rows) == []


def test_sequence_numbers_wrap():
    assert te.older(2**32 - 10, 5) and not te.older(5, 2**32 - 10) and not te.older(7, 7)
