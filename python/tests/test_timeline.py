"""fsin.read_timeline against the timelines `fsin run --timeline` writes:
both formats give the same tables, and they add up to the
run's report."""

from __future__ import annotations

import json

import pytest

import fsin
from test_run import cli


def timeline_run(tmp_path, name: str, *settings: str) -> tuple[dict, dict]:
    path = tmp_path / name
    p = cli("run", "--json", "-q", *settings, "--timeline", str(path))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), fsin.read_timeline(path)


@pytest.mark.parametrize("name", ["pp.prv", "pp.json"])
def test_a_ping_pong_reads_back_as_hand_computed(tmp_path, name):
    # docs/contracts.md, "Timelines"; sim-server/tests/timeline.rs gives
    # the hand computation.
    trace = tmp_path / "late.trc"
    trace.write_text("s 0 1 0 64\nc 1 100\nr 0 1 0 64\ns 1 0 0 64\nr 1 0 0 64\n")
    report, tl = timeline_run(tmp_path, name, f"tracefile={trace}", "topo=torus_4")
    states = tl["states"]
    assert sorted(states.itertuples(index=False, name=None)) == [
        (0, "task 0", 0, 1, "Blocking Send"),
        (0, "task 0", 1, 117, "Waiting a message"),
        (1, "task 1", 0, 100, "Running"),
        (1, "task 1", 100, 101, "Blocking Send"),
    ]
    assert sorted(tl["messages"].itertuples(index=False, name=None)) == [
        (0, 1, 0, 17, 64, 0),
        (1, 0, 100, 117, 64, 0),
    ]
    assert report["exec_cycles"] == 117
    # One window of the 117 cycles: 32 phits over 4 nodes.
    load = tl["counters"][tl["counters"].counter == "accepted load"]
    # Paraver keeps millionths.
    assert list(load.value) == pytest.approx([32 / 4 / 117], rel=1e-5)


@pytest.mark.parametrize("name", ["k.prv", "k.json"])
def test_a_kernels_timeline_adds_up_to_its_report(tmp_path, name):
    report, tl = timeline_run(
        tmp_path, name, "kernel=all2all", "kernel_bytes=2500", "topo=torus_4_4"
    )
    assert len(tl["messages"]) == report["messages_delivered"] == 16 * 15
    per_task = tl["states"].assign(d=lambda s: s.end - s.begin).groupby("row").d.sum()
    assert list(per_task) == report["task_done_cycles"]


@pytest.mark.parametrize("name", ["co.prv", "co.json"])
def test_a_cosimulations_timeline_reads_back(tmp_path, name):
    # docs/cosim.md, "A timeline of the rounds": rows "node N", each
    # slice Running then Synchronization, one message per frame
    # delivered, the network's counters per window (every slice here).
    path = tmp_path / name
    p = cli("demo", "--nodes", "4", "--workload", "all2all", "--json",
            "--timeline", str(path), "topo=torus_4", "util_window=1")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout.strip().splitlines()[-1])
    tl = fsin.read_timeline(path)
    states = tl["states"]
    assert sorted(set(states["name"])) == ["node 0", "node 1", "node 2", "node 3"]
    assert set(states["state"]) == {"Running", "Synchronization"}
    assert len(tl["messages"]) == report["frames_delivered"] == 12
    assert "accepted load" in set(tl["counters"]["counter"])


def write_ranks_timeline(tmp_path, name: str):
    """A timeline as `fsin qemu --trace-level mpi --timeline` writes it
    (fsin-timeline's writers, docs/contracts.md "Timelines"): guests 0 and
    1, rank 0 a track of guest 1, in MPI_Send from tick 10 to 50 then
    running to 70, and a frame from guest 0 to rank 0 sent at 20, in at 30."""
    path = tmp_path / name
    if name.endswith(".prv"):
        path.write_text(
            "#Paraver (01/01/70 at 00:00):100_ns:2(1,1):1:2(1:1,2:2)\n"
            "1:2:1:2:2:10:50:4\n"
            "2:2:1:2:2:10:50000001:1\n"
            "3:1:1:1:1:20:20:2:1:2:2:30:30:64:0\n"
            "2:2:1:2:2:50:50000001:0\n"
            "1:2:1:2:2:50:70:1\n"
        )
        path.with_suffix(".pcf").write_text(
            "STATES\n0    Idle\n1    Running\n4    Blocking Send\n\n\n"
            "EVENT_TYPE\n0    50000001    MPI Point-to-point\nVALUES\n0   End\n1   MPI_Send\n\n\n"
            "EVENT_TYPE\n0    91000000    accepted load (millionths)\n"
        )
        path.with_suffix(".row").write_text(
            "LEVEL CPU SIZE 2\nnode 0\nnode 1\n\nLEVEL NODE SIZE 2\nnode 0\nnode 1\n\n"
            "LEVEL THREAD SIZE 3\nguest 0\nguest 1\nrank 0\n"
        )
    else:
        events = [
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "guest 0"}},
            {"ph": "M", "name": "thread_name", "pid": 2, "tid": 2, "args": {"name": "guest 1"}},
            {"ph": "M", "name": "thread_name", "pid": 2, "tid": 3, "args": {"name": "rank 0"}},
            {"ph": "X", "name": "MPI_Send", "cat": "mpi", "pid": 2, "tid": 3, "ts": 0.010,
             "dur": 0.040, "args": {"state": "Blocking Send"}},
            {"ph": "s", "name": "message", "id": 0, "pid": 1, "tid": 1, "ts": 0.020,
             "args": {"bytes": 64, "tag": 0, "to": 3}},
            {"ph": "f", "bp": "e", "name": "message", "id": 0, "pid": 2, "tid": 3, "ts": 0.030},
            {"ph": "X", "name": "Running", "pid": 2, "tid": 3, "ts": 0.050, "dur": 0.020},
        ]
        path.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}))
    return path


@pytest.mark.parametrize("name", ["ranks.prv", "ranks.json"])
def test_a_ranks_track_and_its_calls_read_back(tmp_path, name):
    tl = fsin.read_timeline(write_ranks_timeline(tmp_path, name))
    assert sorted(tl["states"].itertuples(index=False, name=None)) == [
        (2, "rank 0", 10, 50, "Blocking Send"),
        (2, "rank 0", 50, 70, "Running"),
    ]
    assert list(tl["calls"].itertuples(index=False, name=None)) == [
        (2, "rank 0", 10, 50, "MPI_Send"),
    ]
    assert list(tl["messages"].itertuples(index=False, name=None)) == [(0, 2, 20, 30, 64, 0)]
    assert tl["counters"].empty
