"""Write a kplay tuning export that pins given launch configs for given kernels on this device, so
that `kplay db import` + KPLAY_DB make kplay.forward/backward use them: how perf_table.py compares
launch shapes with torch in one process without a new build (scripts/configs_vs_torch.sh).

usage: pinned_configs.py BASE_EXPORT.json OUT.json N 'act|dtype|direction|block|per_thread[|vec[|waves[|cache[|knobs]]]]' ...
  BASE_EXPORT  `kplay db export` of any tuning on this device: gives its fingerprint and device fields
  N            the problem size the records are for (their size bucket follows from it)
  vec          elements per access (default: 16 bytes); waves: grid-stride with that many waves
               (default one-shot); cache: default or streaming; knobs: '+'-separated, of
               general (the general kernel only) and late (backward: the gradient loaded late)
"""
import copy
import json
import sys

WIDEST = {"f16": 8, "bf16": 8, "f32": 4, "f64": 2}


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    base = json.load(open(sys.argv[1]))
    if not base.get("tunings"):
        sys.exit("pinned_configs.py: %s holds no tuning record to take the device from" % sys.argv[1])
    template, n = base["tunings"][0], int(sys.argv[3])
    records = []
    for row in sys.argv[4:]:
        act, dtype, direction, block, per_thread, *more = row.split("|")
        more += [""] * (4 - len(more))
        knobs = set(filter(None, more[3].split("+")))
        if knobs - {"general", "late"}:
            sys.exit("pinned_configs.py: unknown knob in %r (expected general, late)" % row)
        t = copy.deepcopy(template)
        t.pop("candidates", None)
        t["spec"] = {"activation": act, "direction": direction, "dtype": dtype, "saved": "input"}
        t["n"] = n
        t["best"] = {"block": int(block), "per_thread": int(per_thread), "vec": int(more[0] or WIDEST[dtype]),
                     "grid": "grid-stride" if more[1] else "one-shot", "waves": int(more[1] or 0),
                     "cache": more[2] or "default", "fast_math": False,
                     "flat": "general" not in knobs, "late_gradient": "late" in knobs}
        records.append(t)
    base["tunings"] = records
    json.dump(base, open(sys.argv[2], "w"), indent=1)


if __name__ == "__main__":
    main()
