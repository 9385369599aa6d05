# Session 81, call a (~2 min; session 80's call d plus the fused RoPE + fp8 append tests): decode_attention over fp8 caches with the codes widened to fp16 and a bf16 q taken to
# fp16 once a program (item 561): the fp8 GPU tests, then bf16 / fp16 q over 16-bit and fp8 caches (call b: 118.8 us).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
timeout 100 python -m pytest -q -p no:cacheprovider -n 12 tests/test_decode_attention.py tests/test_integrations.py tests/test_rope.py \
  -k "fp8 or append" 2>&1 | tail -2
timeout 100 python - <<'PY' 2>&1 | grep -v Warn
import torch
from rooftop.bench.timing import graph_replay_us
from rooftop.ops import decode_attention as dm
for shape in ((1, 32, 131072, 128), (16, 32, 8192, 128)):
    for dt in (torch.bfloat16, torch.float16):
        s16 = [dm._make_decode_inputs(shape, dt, "cuda") for _ in range(3)]
        s8 = [(q, dm.quantize_kv(k, 1 / 64), dm.quantize_kv(v, 1 / 64), s) for q, k, v, s in s16]
        a = graph_replay_us([lambda s=s: dm.decode_attention(*s) for s in s16], repeat=20)
        b = graph_replay_us([lambda s=s: dm.decode_attention(*s, k_scale=1/64, v_scale=1/64) for s in s8], repeat=20)
        print(shape, dt, f"16-bit caches {a:.1f} us, fp8 {b:.1f} us ({a / b:.2f}x)")
PY
