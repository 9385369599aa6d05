# Session 81, call d (~2.5 min, any card): the fp8 KV integration after the review's mends (items 566-567) on a GPU,
# then why the model's fp8 steps gained less than the kernel (call b: 1.911 ms a step against session 80's 1.919):
# decode_attention at the model's shape (batch 8, 32 / 8 heads, 8224 keys) with and without the key mask a patched
# model passes (all keys seen), 16-bit and fp8 caches, bf16 q, GPU alone by graph replay over 6 input sets.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
timeout 150 python -m pytest -q -p no:cacheprovider -n 12 tests/test_integrations.py tests/test_rope.py \
  tests/test_compile.py -k "fp8 or append or rope" 2>&1 | tail -2
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
