# Session 78 probe (an experiment kept with its logs): which packed-head tiles go wrong on the GPU, by window and loop
# form (JOURNAL items 547-549: predicted wrong exactly where profile.kernels.clobbered_mma_operands flags the SASS).
import torch

import rooftop.ops.attention as A
from rooftop.ops._support import Plans
from rooftop.ops.attention import AttentionConfig, attention, attention_reference

cuda = torch.cuda.is_available()
dev, dt = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float16)
A.PACKED_SINGLE_LOOP_MAX_BLOCK_N = 128  # the probe forces the 64-key packed tiles the library refuses
torch.manual_seed(0)
S = 300 if cuda else 100
q = torch.randn(1, 8, S, 64, device=dev, dtype=dt)
k, v = (torch.randn(1, 2, S, 64, device=dev, dtype=dt) for _ in range(2))
configs = [AttentionConfig(bm, bn, 4, 2, heads=h, single_loop=sl) for h, bm in ((1, 64), (2, 64), (4, 128), (2, 128))
           for bn in (32, 64) for sl in (False, True)] if cuda else [
    AttentionConfig(64, 64, 4, 1, heads=2, single_loop=True)]
cases = ((True, 127), (True, 100), (True, 200), (True, 56), (False, (56, 62)), (False, (24, 30)), (False, (100, 100)))
for causal, window in cases if cuda else cases[:2]:
    ref = attention_reference(q, k, v, causal, window=window)
    line = []
    for c in configs:
        A.attention_configs = lambda *a, c=c, **kw: (c,)
        A._plans = Plans()
        out = attention(q, k, v, causal, window=window)
        err = float((out.double() - ref).norm() / ref.norm())
        line.append(f"{c.block_m}x{c.block_n}h{c.heads}{'s' if c.single_loop else 't'} {err:.0e}")
    print(causal, window, " | ".join(line), flush=True)
