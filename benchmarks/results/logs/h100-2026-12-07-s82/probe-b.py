import torch
from rooftop.ops import decode_attention as dm
from rooftop.ops import _support as sp
shape = (8, 32, 8224, 128)
q, k, v, s = dm._make_decode_inputs(shape, torch.bfloat16, "cuda")
k8, v8 = dm.quantize_kv(k, 1 / 64), dm.quantize_kv(v, 1 / 64)
every = torch.ones(8, 8224, dtype=torch.bool, device="cuda")
real = sp.fitting_stages
def spy(kernel, *a, **kw):
    st, c = real(kernel, *a, **kw)
    print(kw.get("HAS_MASK"), kw.get("HAS_BOUNDS"), "stages", st, "regs", getattr(c, "n_regs", None),
          "spills", getattr(c, "n_spills", None), "resident", getattr(c, "resident_per_sm", None),
          "smem", getattr(c, "shared", None))
    return st, c
dm.fitting_stages = spy
for kk, vv, kw in ((k, v, {}), (k8, v8, dict(k_scale=1 / 64, v_scale=1 / 64))):
    for extra in ({}, dict(key_mask=every), dict(key_mask=every, mask_bounds=dm.mask_bounds(every, s))):
        dm.decode_attention(q, kk, vv, s, **kw, **extra)
torch.cuda.synchronize()
