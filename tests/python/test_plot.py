"""python -m kplay.plot: tolerant sweep reading, and PNG/SVG charts from a sweep and a database."""
import json

import pytest

from kplay import plot


def test_sweep_csv_is_read_tolerantly(tmp_path):
    p = tmp_path / "sweep.csv"
    p.write_text("Activation,dtype,direction,n,kernel_ms,copy_ms,kernel_gbps,copy_gbps,ratio,extra\n"
                 "selu,f32,forward,1048576,0.004,0.004,,2000,1.0,x\n"
                 "selu,f16,backward,2048,,,10,11,,\n"
                 "relu,f32,forward,,1,1,1,1,1,\n")
    rows = plot.read_sweep(str(p))
    assert len(rows) == 2  # the row without n is skipped
    assert rows[0]["kernel_gbps"] == pytest.approx(2 * 1048576 * 4 / 0.004e-3 / 1e9)
    assert rows[0]["copy_gbps"] == 2000 and rows[0]["torch_gbps"] is None
    assert rows[1]["direction"] == "backward" and rows[1]["kernel_gbps"] == 10


def test_sweep_json_forms(tmp_path):
    p = tmp_path / "sweep.json"
    p.write_text(json.dumps({"results": [{"activation": "relu", "n": 4096, "kernel_gbps": 5, "copy_gbps": 6}]}))
    assert plot.read_sweep(str(p))[0]["dtype"] == "f32"


def test_charts_are_written(tmp_path, cl_queue, tmp_db):
    pytest.importorskip("matplotlib")
    import kplay

    rows = [{"activation": "selu", "dtype": "f32", "direction": "forward", "n": 1 << k, "kernel_gbps": k * 10.0,
             "copy_gbps": k * 11.0, "torch_gbps": None} for k in range(10, 20)]
    files = plot.plot_bandwidth(rows, str(tmp_path / "bw"))
    assert sorted(f.rsplit(".", 1)[1] for f in files) == ["png", "svg"]
    kplay.autotune("selu", 4096, backend="opencl", strategy="random", budget=3, repeats=3, db=tmp_db)
    assert plot.main(["tuning", "--db", tmp_db, "--out", str(tmp_path / "t"), "--format", "png"]) == 0
    assert list((tmp_path / "t").glob("tuning_selu_forward_f32_4096.png"))
    assert plot.main(["bench", "--db", tmp_db, "--out", str(tmp_path / "b")]) == 0


def test_database_without_tuning_records_says_what_is_missing(tmp_path, tmp_db, capsys):
    # What launches leave behind (compiled kernels, no timings) cannot be charted: the command
    # names what is missing and fails, for bench --db and tuning alike; no files are written.
    for argv in (["bench", "--db", tmp_db], ["tuning", "--db", tmp_db]):
        assert plot.main(argv + ["--out", str(tmp_path / "none")]) == 1
        err = capsys.readouterr().err
        assert "has no tuning records" in err and "kplay autotune" in err and tmp_db in err
    assert not (tmp_path / "none").exists()


def test_sweep_without_measurements_says_so(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    p = tmp_path / "sweep.csv"
    p.write_text("activation,n,kernel_gbps\nselu,4096,\n")
    assert plot.main(["bench", str(p), "--out", str(tmp_path / "none")]) == 1
    assert "no row with n and a kernel, copy or torch" in capsys.readouterr().err
