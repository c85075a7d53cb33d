"""kplay's activations in a DistributedDataParallel training step, the way users scale out:
`torchrun --nproc_per_node=2 -m kplay.bench_ddp [--acts silu,gelu,mish] [--json PATH]`.

Each rank takes its own GPU (LOCAL_RANK) and a stream of its own, NCCL between them. Per
activation, an MLP 1024-4096-4096-1024 (the activation after each hidden layer), bfloat16
autocast, batch 512 per rank, MSE loss to a fixed target, SGD; kplay's variant is
replace_activations on a deep copy (same weights), each variant in its own DDP wrapper, trained on
the same per-rank data in interleaved rounds (order swapped every round). Reported:
- the kernels' first use on each rank (kplay's forward and backward of every activation, started
  together after a barrier): both ranks open the one kernel database ($KPLAY_DB, or --db) at once,
  compiling into it where it is cold and loading from it where it is warm; a rank stalled when
  its first use took longer than --stall-s;
- the first DDP step of each variant, and the median and interquartile range of the step time
  over the rounds (rank 0's clock; DDP's all-reduce keeps the ranks in step);
- the losses (mean over the ranks) of every step of both variants: equal when they agree within
  --loss-rtol relative (default 1e-3: the two compute the same bfloat16 activations but for
  roundings of single elements, and the loss is a mean over 512 x 1024 of them per rank).
Rank 0 prints the table and writes --json. Without CUDA, or outside torchrun, it says so and
exits (status 3, 2) having run nothing.
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from . import _bench

ACTIVATIONS = ("silu", "gelu", "mish")
WIDTHS = (1024, 4096, 4096, 1024)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="torchrun --nproc_per_node=2 -m kplay.bench_ddp",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--acts", default=",".join(ACTIVATIONS), help="comma-separated: %(default)s (or all)")
    p.add_argument("--batch", type=int, default=512, help="rows per rank (default %(default)s)")
    p.add_argument("--rounds", type=int, default=10, help="timed rounds per variant (default %(default)s)")
    p.add_argument("--steps", type=int, default=10, help="steps per round (default %(default)s)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per variant, the first one included")
    p.add_argument("--loss-rtol", type=float, default=1e-3, help="losses equal within this (default %(default)s)")
    p.add_argument("--stall-s", type=float, default=10.0,
                   help="a rank whose kernels' first use takes longer has stalled (default %(default)s s)")
    p.add_argument("--db", metavar="PATH", help="kernel database of every rank (sets KPLAY_DB; default: as set)")
    p.add_argument("--json", metavar="PATH", help="rank 0 writes the whole result here")
    args = p.parse_args(argv)
    try:
        args.acts = _bench.parse_list(args.acts, ACTIVATIONS, "activation")
    except ValueError as e:
        p.error(str(e))
    if min(args.batch, args.rounds, args.steps, args.warmup) < 1:
        p.error("--batch, --rounds, --steps and --warmup must be at least 1")
    if not (args.loss_rtol > 0 and args.stall_s > 0):
        p.error("--loss-rtol and --stall-s must be > 0")
    return args


def build_mlp(torch: Any, activation: str) -> Any:
    """1024-4096-4096-1024 with torch's activation module after each hidden layer."""
    cls = {"silu": torch.nn.SiLU, "gelu": torch.nn.GELU, "mish": torch.nn.Mish}[activation]
    layers: List[Any] = []
    for i, (a, b) in enumerate(zip(WIDTHS, WIDTHS[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i < len(WIDTHS) - 2:
            layers.append(cls())
    return torch.nn.Sequential(*layers)


def _first_use(torch: Any, acts: Sequence[str], device: Any) -> float:
    """Seconds for kplay's bfloat16 forward and backward of each activation, the first time in this
    process: a compile into the database, or a load from it."""
    import kplay.torch as kt

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for act in acts:
        x = torch.randn(4096, device=device, dtype=torch.bfloat16, requires_grad=True)
        kt.activation(x, act).sum().backward()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


class _Variant:
    def __init__(self, torch: Any, model: Any, device: Any, x: Any, target: Any) -> None:
        from torch.nn.parallel import DistributedDataParallel as DDP

        self.torch = torch
        self.ddp = DDP(model.to(device), device_ids=[device.index] if device.type == "cuda" else None)
        self.device_type = device.type
        self.opt = torch.optim.SGD(self.ddp.parameters(), lr=1e-2)
        self.x, self.target = x, target
        self.losses: List[Any] = []

    def step(self) -> None:
        torch = self.torch
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast(self.device_type, dtype=torch.bfloat16):
            out = self.ddp(self.x)
        loss = torch.nn.functional.mse_loss(out.float(), self.target)
        loss.backward()
        self.opt.step()
        self.losses.append(loss.detach())


def _timed(torch: Any, fn: Any, steps: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / steps


def _mean_over_ranks(torch: Any, dist: Any, losses: List[Any]) -> List[float]:
    t = torch.stack(losses)
    dist.all_reduce(t)
    return (t / dist.get_world_size()).tolist()


def run_activation(torch: Any, dist: Any, act: str, device: Any, args: argparse.Namespace) -> Dict[str, Any]:
    import kplay.nn as knn
    import kplay.torch as kt

    rank = dist.get_rank()
    torch.manual_seed(0)  # the same weights on every rank, as DDP requires (it broadcasts rank 0's too)
    base = build_mlp(torch, act)
    ours = kt.replace_activations(copy.deepcopy(base))
    swapped = sum(1 for m in ours.modules() if isinstance(m, knn.Activation))
    gen = torch.Generator(device=device).manual_seed(100 + rank)  # each rank its own data
    x = torch.randn(args.batch, WIDTHS[0], device=device, generator=gen)
    target = torch.randn(args.batch, WIDTHS[-1], device=device, generator=gen)
    variants = {"torch": _Variant(torch, base, device, x, target), "kplay": _Variant(torch, ours, device, x, target)}
    row: Dict[str, Any] = {"model": f"mlp {'-'.join(map(str, WIDTHS))} {act}, DDP x{dist.get_world_size()}",
                           "mode": "ddp_bf16", "batch": args.batch, "swapped": swapped}
    for name, v in variants.items():
        dist.barrier()
        row[name] = {"first_step_ms": _timed(torch, v.step, 1)}
    rounds = _bench.interleaved({n: v.step for n, v in variants.items()},
                                {n: (lambda v=v: _timed(torch, v.step, args.steps)) for n, v in variants.items()},
                                args.warmup - 1, args.rounds)
    for name in rounds:
        row[name].update(_bench.summary(rounds[name]))
    row.update(_bench.verdict(rounds["torch"], rounds["kplay"]))
    lt = _mean_over_ranks(torch, dist, variants["torch"].losses)
    lk = _mean_over_ranks(torch, dist, variants["kplay"].losses)
    diffs = [_bench.rel_diff(k, t) for k, t in zip(lk, lt)]
    row["losses"] = {"torch": lt, "kplay": lk}
    row["loss_rel_diff"] = diffs[0]
    row["loss_max_rel_diff"] = max(diffs)
    row["losses_equal"] = bool(max(diffs) <= args.loss_rtol and len(lt) == len(lk))
    return row


HEADERS = ("model", "mode", "batch/rank", "swapped", "torch ms", "kplay ms", "kplay/torch", "met",
           "first step ms t/k", "loss rel diff max", "losses equal")


def table_row(row: Dict[str, Any]) -> List[str]:
    f = _bench.fmt
    t, k = row["torch"], row["kplay"]
    return [row["model"], row["mode"], str(row["batch"]), str(row["swapped"]), f"{f(t['median'])} ±{f(t['iqr'])}",
            f"{f(k['median'])} ±{f(k['iqr'])}", f(row["ratio"], ".3f"), "yes" if row["met"] else "NO",
            f"{f(t['first_step_ms'], '.1f')}/{f(k['first_step_ms'], '.1f')}", f(row["loss_max_rel_diff"], ".1e"),
            "yes" if row["losses_equal"] else "NO"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.db:
        os.environ["KPLAY_DB"] = os.path.abspath(args.db)  # before kplay opens its database
    if "LOCAL_RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        sys.stderr.write("kplay.bench_ddp: start it with torchrun, one process per GPU: "
                         "torchrun --nproc_per_node=2 -m kplay.bench_ddp\n")
        return 2
    torch = _bench.require_cuda("kplay.bench_ddp")
    import torch.distributed as dist

    import kplay

    local_rank = int(os.environ["LOCAL_RANK"])
    if local_rank >= torch.cuda.device_count():
        sys.stderr.write(f"kplay.bench_ddp: rank {local_rank} has no GPU of its own "
                         f"({torch.cuda.device_count()} visible); start as many processes as GPUs\n")
        return _bench.NO_CUDA_STATUS
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    stream = torch.cuda.Stream(device)
    status = 0
    with torch.cuda.stream(stream):
        db = kplay.db_stats()
        dist.barrier()
        first_use_s = _first_use(torch, args.acts, device)
        db_after = kplay.db_stats()
        per_rank = [None] * world
        dist.all_gather_object(per_rank, {"rank": rank, "device": torch.cuda.get_device_name(device),
                                          "first_use_s": first_use_s, "db_path": db["path"],
                                          "db_persistent": db["persistent"], "binaries_before": db["binaries"],
                                          "binaries_after": db_after["binaries"]})
        rows = [run_activation(torch, dist, act, device, args) for act in args.acts]
    dist.barrier()
    if rank == 0:
        stalled = [r["rank"] for r in per_rank if r["first_use_s"] > args.stall_s]
        shared = len({r["db_path"] for r in per_rank}) == 1
        print("kernels' first use per rank (kplay forward and backward, bfloat16, "
              f"{', '.join(args.acts)}), database {per_rank[0]['db_path']}:")
        for r in per_rank:
            print(f"  rank {r['rank']} ({r['device']}): {r['first_use_s'] * 1e3:.0f} ms, binaries in the database "
                  f"{r['binaries_before']} -> {r['binaries_after']}")
        print(f"  one database for all ranks: {'yes' if shared else 'NO'}; "
              f"stalled (first use over {args.stall_s:g} s): {stalled or 'none'}")
        print()
        print(_bench.table(HEADERS, [table_row(r) for r in rows]))
        print("ms: rank 0's median step time over the rounds ± interquartile range; losses: mean over the ranks, "
              f"every step, equal within {args.loss_rtol:g} relative")
        doc = {"command": "torchrun -m kplay.bench_ddp " + " ".join(sys.argv[1:] if argv is None else argv),
               "environment": _bench.environment(torch, local_rank), "world_size": world,
               "settings": {k: v for k, v in vars(args).items() if k != "json"}, "first_use": per_rank,
               "shared_database": shared, "stalled_ranks": stalled, "rows": rows}
        if args.json:
            _bench.write_json(args.json, doc)
            print(f"wrote {args.json}")
        if stalled or not shared or not all(r["losses_equal"] for r in rows):
            status = 1
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
