# session 33, call d: end to end over a 4096 cache with the merged int4 projections' batch-1 GEMVs re-tuned among the
# PREFETCH candidates (session 32's e2e tuner cache less those four entries); the int4 batch-1 results rows tuned from an
# empty cache (rooftop and cuBLAS only)
export PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/e2e && tar xzf benchmarks/results/logs/h200-2026-12-03-s32/call-a/tuner-cache.tgz -C /tmp/e2e
python - <<'PY'
import json
path = "/tmp/e2e/autotune-nvidia-h200-triton-3.6.0.json"
d = json.load(open(path))
merged = {f"quant_matmul|1|{n}|{k}|4|" for n, k in ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336))}
drop = [key for key in d if any(key.startswith(m) for m in merged)]
print("re-tuned:", drop)
json.dump({k: v for k, v in d.items() if k not in drop}, open(path, "w"))
PY
ROOFTOP_CACHE_DIR=/tmp/e2e timeout 330 python benchmarks/e2e_decode.py $OUT --graphs --cache-len 4096 --repeats 2 \
    --argmax-ab > $OUT/e2e-graphs-4096.log 2>&1; echo "e2e 4096 rc $?"; tail -8 $OUT/e2e-graphs-4096.log | cut -c1-170
python -c "import json; d = json.load(open('/tmp/e2e/autotune-nvidia-h200-triton-3.6.0.json'))
[print(k.split('|')[1:5], v.get('PREFETCH', 0), v.get('SPLIT_K'), v.get('SLICES')) for k, v in d.items() if k.startswith('quant_matmul|1|')]"
tar czf $OUT/tuner-cache-e2e.tgz -C /tmp/e2e .
ROOFTOP_CACHE_DIR=/tmp/cache timeout 200 python benchmarks/gpu_session.py $OUT/results --families quant_matmul \
    --ops quant_matmul_int4 --leading 1 --providers rooftop,cublas --no-ncu > $OUT/session-quant-int4.log 2>&1
echo "int4 rc $?"; grep "graph" $OUT/session-quant-int4.log | sed -E 's/ +\|.*//' | cut -c1-150 | tail -6
tar czf $OUT/tuner-cache.tgz -C /tmp/cache .
rm -f $OUT/results/*.csv $OUT/*.csv
