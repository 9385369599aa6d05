# Session 82, call b (~5 min, any card): call a after the mask read became a branch in the one loop: GPU tests of mask_bounds
# (item 571); the key mask's cost with and without mask_bounds at the model's shape; then the int4 Llama-3-8B-shaped
# model (8 layers, batch 8 over 8192-token prompts) with fp8 KV caches against 16-bit ones. One tarball $OUT/a.tgz.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/b; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/b.tgz -C /tmp b; }
timeout 120 python -m pytest -q -p no:cacheprovider -n 12 tests/test_decode_attention.py 2>&1 | tail -3 \
  | tee $W/tests-decode.txt; pack
timeout 120 python - <<'PY' 2>&1 | grep -v Warn | tee $W/mask.txt
import torch
from rooftop.bench.timing import graph_replay_us
from rooftop.ops import decode_attention as dm
shape, dt = (8, 32, 8224, 128), torch.bfloat16
s16 = [dm._make_decode_inputs(shape, dt, "cuda") for _ in range(6)]
s8 = [(q, dm.quantize_kv(k, 1 / 64), dm.quantize_kv(v, 1 / 64), s) for q, k, v, s in s16]
lengths = s16[0][3]
every = torch.ones(8, 8224, dtype=torch.bool, device="cuda")
padded = torch.arange(8224, device="cuda") >= torch.arange(8, device="cuda")[:, None] * 512  # left padding 0..3584
for name, sets, kw in (("bf16", s16, {}), ("fp8", s8, dict(k_scale=1 / 64, v_scale=1 / 64))):
    for label, extra in (("no mask", {}), ("mask", dict(key_mask=every)),
                         ("mask+bounds", dict(key_mask=every, mask_bounds=dm.mask_bounds(every, lengths))),
                         ("padded mask", dict(key_mask=padded)),
                         ("padded+bounds", dict(key_mask=padded, mask_bounds=dm.mask_bounds(padded, lengths)))):
        t = graph_replay_us([lambda s=s: dm.decode_attention(*s, **kw, **extra) for s in sets], repeat=20)
        print(f"{shape} {name} caches, {label}: {t:.1f} us")
PY
pack
ROOFTOP_AUTOTUNE=0 timeout 330 python benchmarks/e2e_decode.py $W/e2e --graphs --batch 8 --prompt 8192 --new 32 \
  --layers 8 --repeats 1 --kv-fp8-ab 2>&1 | grep -v Warn > $W/e2e.txt; tail -14 $W/e2e.txt
pack
