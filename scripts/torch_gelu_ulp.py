"""torch's float32 gelu (erf) against a float64 reference 0.5 x erfc(-x / sqrt 2), every float in
[-16, 7] on the GPU: the worst error per region in ulps of the float32 nearest the exact result,
and how many inputs exceed 2 ulp (kplay's bound). docs/benchmarks.md, "Session 12".
Usage: python3 scripts/torch_gelu_ulp.py   (needs torch with CUDA)"""
import torch, math
dev = "cuda"
def ulp_err(x):
    y = torch.nn.functional.gelu(x)
    xd = x.double()
    ref = 0.5 * xd * torch.special.erfc(-xd / math.sqrt(2.0))
    r32 = ref.float()
    e = torch.floor(torch.log2(r32.abs().double().clamp_min(2.0**-149)))
    ulp = torch.pow(2.0, (e - 23).clamp_min(-149))
    err = ((y.double() - ref).abs() / ulp)
    return err
regions = [(-16.0, -5.0), (-5.0, -1.0), (-1.0, 0.0), (0.0, 7.0)]
def bits(v): return torch.tensor([v], dtype=torch.float32).view(torch.int32).item()
for lo, hi in regions:
    worst, at, n, over2 = 0.0, None, 0, 0
    # walk bit patterns from lo to hi (sign-magnitude: negative ranges go downward in magnitude)
    a, b = sorted([bits(lo), bits(hi)]) if lo >= 0 else sorted([bits(hi) if hi != 0 else bits(-0.0), bits(lo)])
    step = 1 << 27
    for s in range(a, b + 1, step):
        idx = torch.arange(s, min(s + step, b + 1), dtype=torch.int64, device=dev).to(torch.int32)
        x = idx.view(torch.float32)
        err = ulp_err(x)
        m, i = err.max(0)
        over2 += int((err > 2).sum())
        n += x.numel()
        if m.item() > worst: worst, at = m.item(), x[i].item()
    print(f"torch gelu f32 [{lo}, {hi}]: {n} inputs, max {worst:.4g} ulp at x = {at!r}, {over2} over 2 ulp")
