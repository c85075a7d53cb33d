"""tools/ncu_launch.py summary: Nsight Compute's CSV (ncu --csv, one row per metric) read back as one
line per kernel, the last launch of each kernel name kept; no GPU needed."""
import csv
import io
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "ncu_launch.py"
HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
          "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
TORCH = ("void at::vectorized_elementwise_kernel<4, at::<unnamed>::mish_backward_kernel(at::TensorIteratorBase &)"
         "::[lambda() (instance 1)], std::array<char *, 3>>(int, T2, T3)")
KPLAY = "kplay_mish_bwdx_f32_v4_b256_p2_cd_pm_flat"


def ncu_csv(launches):
    """As ncu writes it: its own lines first, then quoted rows; launches: (id, kernel, block, metrics)."""
    out = io.StringIO()
    out.write("==PROF== Connected to process 1 (python3)\n")
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(HEADER)
    for i, kernel, block, metrics in launches:
        for name, unit, value in metrics:
            w.writerow([i, 1, "python3", "host", kernel, 1, 7, block, "(16384, 1, 1)", 0, "9.0", "s", name, unit, value])
        w.writerow([i, 1, "python3", "host", kernel, 1, 7, block, "(16384, 1, 1)", 0, "9.0", "Occupancy", "", "", ""])
    return out.getvalue()


def summary(tmp_path, text):
    path = tmp_path / "ncu.csv"
    path.write_text(text)
    return subprocess.run([sys.executable, str(TOOL), "summary", str(path)], capture_output=True, text=True)


def test_one_line_per_kernel_from_its_last_launch(tmp_path):
    cold = [("Duration", "us", "60,000"), ("Registers Per Thread", "register/thread", "44")]
    warm = [("Duration", "ns", "51,168"), ("Registers Per Thread", "register/thread", "48"),
            ("Theoretical Occupancy", "%", "62.50")]
    r = summary(tmp_path, ncu_csv([(0, KPLAY, "(256, 1, 1)", cold), (1, TORCH, "(128, 1, 1)",
                                   [("Duration", "ns", "49,152"), ("Registers Per Thread", "register/thread", "40")]),
                                   (2, KPLAY, "(256, 1, 1)", warm)]))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    kplay = next(line for line in lines if line.startswith(KPLAY))
    torch = next(line for line in lines if line.startswith("torch mish_backward_kernel"))
    assert "51168 ns" in kplay and "60000" not in kplay  # the warm launch replaced the cold one
    assert " 48 " in kplay and "62.50" in kplay and "(256, 1, 1)" in kplay
    assert "49152 ns" in torch and " 40 " in torch and "(128, 1, 1)" in torch
    assert len([line for line in lines if "kplay_" in line]) == 1


def test_a_file_without_metrics_is_refused(tmp_path):
    r = summary(tmp_path, "==PROF== Disconnected from process 1\n")
    assert r.returncode != 0
    assert "no kernel metrics" in r.stderr
