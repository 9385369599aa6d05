# Session 82, call d (~30 s, any card): a sliding window's mask (gpt-oss's 128 keys) at decode, with and without
# mask_bounds, at the model's shape: the bounds let the kernel read the window's tiles alone.
import torch
from rooftop.bench.timing import graph_replay_us
from rooftop.ops import decode_attention as dm
print(torch.cuda.get_device_name())
shape, dt = (8, 32, 8224, 128), torch.bfloat16
s16 = [dm._make_decode_inputs(shape, dt, "cuda") for _ in range(6)]
s8 = [(q, dm.quantize_kv(k, 1 / 64), dm.quantize_kv(v, 1 / 64), s) for q, k, v, s in s16]
lengths = s16[0][3]
window = torch.arange(8224, device="cuda") >= 8224 - 128
window = window[None].expand(8, -1)
for name, sets, kw in (("bf16", s16, {}), ("fp8", s8, dict(k_scale=1 / 64, v_scale=1 / 64))):
    for label, extra in (("no mask", {}), ("window mask", dict(key_mask=window)),
                         ("window+bounds", dict(key_mask=window, mask_bounds=dm.mask_bounds(window, lengths)))):
        t = graph_replay_us([lambda s=s: dm.decode_attention(*s, **kw, **extra) for s in sets], repeat=20)
        print(f"{shape} {name} caches, {label}: {t:.1f} us")
