"""tools/softmax_table.py --markdown: the rows a --json run wrote, printed as docs/benchmarks.md's
table (forward and backward of an op, shape and dtype on one line); no GPU or torch needed."""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "softmax_table.py"


def measured(op, shape, dtype, direction, kplay, eager, compile_, wins, ulps):
    return {"op": op, "shape": shape, "dtype": dtype, "direction": direction, "kplay_pct": kplay,
            "eager_pct": eager, "compile_pct": compile_, "wins_eager": wins[0], "wins_compile": wins[1],
            "kplay_ulps": ulps[0], "eager_ulps": ulps[1], "copy_ms": 0.1, "rounds": 9, "cli": {}}


def markdown(tmp_path, rows):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(rows))
    run = subprocess.run([sys.executable, str(TOOL), "--markdown", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_directions_of_a_row_share_a_line_in_measured_order(tmp_path):
    rows = [measured("softmax", "65536x128", "f32", "forward", 88.14, 97.74, 100.68, (0, 1), (0.5078, 31.72)),
            measured("log_softmax", "4096x393216", "bf16", "forward", 64.9, 49.7, 53.5, (9, 9), (0.5, 0.5)),
            measured("softmax", "65536x128", "f32", "backward", 94.1, 54.4, 108.2, (9, 0), (0.5, 1.14e6))]
    lines = markdown(tmp_path, rows)
    assert lines[0].startswith("| op, rows × cols | dtype | forward")
    assert lines[2:] == [
        "| softmax 65536×128 | f32 | 88.1 / 97.7 / 100.7 | 0/1 | 94.1 / 54.4 / 108.2 | 9/0 | 0.51 / 31.7 "
        "| 0.50 / 1.14e+06 |",
        "| log_softmax 4096×393216 | bf16 | 64.9 / 49.7 / 53.5 | 9/9 | - | - | 0.50 / 0.5 | - |"]
