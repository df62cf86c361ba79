"""fsin.kernel, fsin.read_trace and fsin.write_trace against `fsin kernel`
and the trace files it writes."""

from __future__ import annotations

import pandas as pd
import pytest

import fsin
from test_run import cli


def command_trace(tmp_path, name: str, tasks: int, size: int, fmt: str):
    path = tmp_path / f"{name}-{tasks}.{fmt}"
    p = cli("kernel", name, "--tasks", str(tasks), "--bytes", str(size), "--format", fmt, "--out", str(path))
    assert p.returncode == 0, p.stderr
    return path


@pytest.mark.parametrize("fmt", ["trc", "dimemas"])
def test_a_trace_fsin_wrote_reads_and_writes_back_byte_for_byte(tmp_path, fmt):
    path = command_trace(tmp_path, "bu", 8, 4096, fmt)
    df = fsin.read_trace(path)
    again = tmp_path / f"again.{fmt}"
    fsin.write_trace(df, again, fmt)
    assert again.read_bytes() == path.read_bytes()


def test_the_kernel_is_the_commands(tmp_path):
    # The butterfly on 8 tasks: 3 stages, each task sends to and receives
    # from i xor 2^s: 8 x 3 sends and as many receives.
    df = fsin.kernel("bu", tasks=8, bytes=4096)
    assert list(df.columns) == ["task", "kind", "peer", "tag", "bytes", "amount"]
    assert (df.kind == "s").sum() == (df.kind == "r").sum() == 24
    sends = df[df.kind == "s"]
    assert set(zip(sends.task, sends.peer)) == {(i, i ^ (1 << s)) for i in range(8) for s in range(3)}
    assert (sends.bytes == 4096).all()
    path = command_trace(tmp_path, "bu", 8, 4096, "trc")
    from_file = fsin.read_trace(path)
    pd.testing.assert_frame_equal(df, from_file)
    assert df.attrs["name"] == from_file.attrs["name"]


def test_a_trace_replays_as_the_command_replays_it(tmp_path):
    path = tmp_path / "a2a.trc"
    fsin.write_trace(fsin.kernel("all2all", tasks=16, bytes=2048), path)
    r = fsin.run(topo="torus_4_4", tracefile=path)
    # Every task sends to the 15 others.
    assert r.messages_delivered == 16 * 15
    want = cli("run", "--json", "-q", "topo=torus_4_4", f"tracefile={path}")
    assert want.returncode == 0, want.stderr
    import json

    assert r.exec_cycles == json.loads(want.stdout.strip().splitlines()[-1])["exec_cycles"]


def test_bad_rows_and_files_are_named(tmp_path):
    df = fsin.kernel("bu", tasks=4, bytes=64)
    df.loc[2, "peer"] = df.loc[2, "task"]
    with pytest.raises(fsin.ConfigError, match="row 2"):
        fsin.write_trace(df, tmp_path / "x.trc")
    bad = tmp_path / "bad.trc"
    bad.write_text("s 0 1 0 5\nq 1 2\n")
    with pytest.raises(fsin.ConfigError, match=r"bad.trc:2"):
        fsin.read_trace(bad)
    with pytest.raises(fsin.ConfigError) as e:
        fsin.read_trace(bad, format="dimemas")
    assert e.value.key == "tracefile"
    with pytest.raises(fsin.ConfigError) as e:
        fsin.kernel("bu", tasks=6)
    assert e.value.key == "tasks"
    with pytest.raises(fsin.ConfigError) as e:
        fsin.kernel("nosuch", tasks=4)
    assert e.value.key == "kernel"
