# Session 81, call e (~1 min, any card): call d's timing after the mask load moved ahead of the keys' (item 568),
# with the GPU tests of decode_attention under a key mask first.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
timeout 100 python -m pytest -q -p no:cacheprovider -n 12 tests/test_decode_attention.py -k "mask or fp8" 2>&1 | tail -1
timeout 100 python - <<'PY' 2>&1 | grep -v Warn
import torch
from rooftop.bench.timing import graph_replay_us
from rooftop.ops import decode_attention as dm
shape, dt = (8, 32, 8224, 128), torch.bfloat16
s16 = [dm._make_decode_inputs(shape, dt, "cuda") for _ in range(6)]
s8 = [(q, dm.quantize_kv(k, 1 / 64), dm.quantize_kv(v, 1 / 64), s) for q, k, v, s in s16]
mask = torch.ones(8, 8224, dtype=torch.bool, device="cuda")
for name, sets, kw in (("bf16", s16, {}), ("fp8", s8, dict(k_scale=1 / 64, v_scale=1 / 64))):
    for masked in (False, True):
        extra = dict(kw, key_mask=mask) if masked else kw
        t = graph_replay_us([lambda s=s: dm.decode_attention(*s, **extra) for s in sets], repeat=20)
        print(f"{shape} {name} caches, key_mask {masked}: {t:.1f} us")
PY
