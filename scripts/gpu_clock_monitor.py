"""The GPU's SM clock, power draw and clock-limit reasons, sampled in the background while a benchmark
runs, so that a table row can say at what clock it was measured.

Why: at 4096x393216 an H200 streams ~4.2 TB/s at 620-670 W of its 700 W limit; kernels with FP64
math add enough power that the driver's power cap lowers the SM clock (to 1400-1750 MHz, session 20),
and only compute-heavy kernels slow down with it. A row measured under the cap is a different
finding from one measured at full clock.

Uses `nvidia-smi -lms` (the driver's tool, no Python dependency); where it is missing or fails, the
monitor stays empty and `summary` returns None.
"""
import subprocess
import threading
import time

# nvidia-smi's clocks_event_reasons bits: SW power cap, HW slowdown, SW thermal, HW thermal, HW power brake.
POWER_OR_THERMAL = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


class ClockMonitor:
    def __init__(self, gpu=None, period_ms=50):
        """gpu: what `nvidia-smi -i` accepts (an index, a UUID as GPU-..., a PCI bus id); None: GPU 0."""
        self.samples = []  # (time.monotonic(), sm_mhz, power_w, reasons)
        self._lock = threading.Lock()
        cmd = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active",
               "--format=csv,noheader,nounits", "-lms", str(period_ms), "-i", str(gpu if gpu is not None else 0)]
        try:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self._proc = None
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self._proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                sample = (time.monotonic(), int(parts[0]), float(parts[1]), int(parts[2], 16))
            except (ValueError, IndexError):
                continue  # a header or "[N/A]": skip the line, keep sampling
            with self._lock:
                self.samples.append(sample)

    def summary(self, t0, t1):
        """Between two time.monotonic() readings: (median SM MHz, lowest SM MHz, highest W, share of
        samples with a power or thermal limit active), or None when no sample fell in the window."""
        with self._lock:
            w = [s for s in self.samples if t0 <= s[0] <= t1]
        if not w:
            return None
        clocks = sorted(s[1] for s in w)
        capped = sum(1 for s in w if s[3] & POWER_OR_THERMAL) / len(w)
        return clocks[len(clocks) // 2], clocks[0], max(s[2] for s in w), capped

    def close(self):
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait()
