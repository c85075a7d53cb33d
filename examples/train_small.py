"""Trains a small MLP with kplay activations through autograd, eagerly and under torch.compile,
next to the same model with torch's activations; prints losses and time per step.

    python examples/train_small.py [--steps 200] [--width 4096] [--batch 512]
"""
import argparse
import copy
import time

from _needs import cuda_or_exit

cuda_or_exit()

import torch

import kplay.torch as kt


def make_model(width):
    return torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.SELU(), torch.nn.Linear(width, width),
                               torch.nn.ReLU(inplace=True), torch.nn.Linear(width, 10))


def train(model, data, steps):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = data
    losses = []
    for step in range(steps + 5):
        if step == 5:  # warm-up steps (compile, first kernel loads) are not timed
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item() if step % 50 == 0 else None)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps * 1e3, [l for l in losses if l is not None]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=512)
    args = ap.parse_args()
    torch.manual_seed(0)
    data = (torch.randn(args.batch, 256, device="cuda"), torch.randint(0, 10, (args.batch,), device="cuda"))
    base = make_model(args.width).cuda()
    results = {}
    for name, compiled in (("torch eager", False), ("torch compiled", True), ("kplay eager", False),
                           ("kplay compiled", True)):
        model = copy.deepcopy(base)
        if name.startswith("kplay"):
            kt.replace_activations(model)
        if compiled:
            torch._dynamo.reset()
            model = torch.compile(model, fullgraph=True)
        ms, losses = train(model, data, args.steps)
        results[name] = ms
        print(f"{name:>15}: {ms:7.3f} ms/step, loss {' -> '.join(f'{l:.4f}' for l in losses)}")
    print(f"kplay/torch step time: eager {results['kplay eager'] / results['torch eager']:.3f}, "
          f"compiled {results['kplay compiled'] / results['torch compiled']:.3f}")


if __name__ == "__main__":
    main()
