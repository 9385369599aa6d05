# session 32, call c: GPU tests of the GEMV PREFETCH candidates and of append_kv (+ the patched static-cache decode);
# the int8 batch-1 results rows tuned from an empty cache (the chain tuner among the new candidates); end to end over a
# 4096 cache with append_kv; the int4 batch-1 rows if time is left; transformers' static cache source on the H200
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
python - > $OUT/transformers-static-cache.txt 2>&1 <<'PY'
import inspect, transformers, transformers.cache_utils as cu, transformers.models.llama.modeling_llama as m
print(transformers.__version__)
for f in (cu.StaticLayer.__init__, cu.StaticLayer.update, cu.Cache.update, m.LlamaAttention.forward):
    print(inspect.getsource(f))
PY
head -1 $OUT/transformers-static-cache.txt
timeout 130 python -m pytest -q -p no:cacheprovider tests/test_quant_matmul.py tests/test_decode_attention.py \
    tests/test_integrations.py -k "pdl_chain or append or static_cache or decode_step_compiles" \
    > $OUT/tests/tests.txt 2>&1; echo "tests rc $?: $(tail -1 $OUT/tests/tests.txt)"; grep "^FAILED" $OUT/tests/tests.txt | cut -c1-200 | head
timeout 170 python benchmarks/gpu_session.py $OUT/results --families quant_matmul --ops quant_matmul_int8 --leading 1 \
    --no-ncu > $OUT/session-quant-int8.log 2>&1; echo "int8 rc $?"
grep "graph" $OUT/session-quant-int8.log | sed -E 's/ +\|.*//' | cut -c1-150 | tail -6
mkdir -p /tmp/e2e && tar xzf benchmarks/results/logs/h200-2026-12-03-s32/call-a/tuner-cache.tgz -C /tmp/e2e
# the end-to-end run only where this transformers' StaticLayer is the one append_kv stands in for
if python -c "from transformers.cache_utils import StaticLayer as L; n = L.update.__code__.co_names
assert 'cumulative_length' in n and 'index_copy_' in n"; then
  ROOFTOP_CACHE_DIR=/tmp/e2e timeout 170 python benchmarks/e2e_decode.py $OUT --graphs --cache-len 4096 --repeats 2 \
      --kv-append-ab \
      > $OUT/e2e-graphs-4096.log 2>&1; echo "e2e 4096 rc $?"; tail -7 $OUT/e2e-graphs-4096.log | cut -c1-170
else echo "StaticLayer.update is not the one append_kv stands in for: no e2e run"; fi
timeout 110 python benchmarks/gpu_session.py $OUT/results --families quant_matmul --ops quant_matmul_int4 --leading 1 \
    --no-ncu > $OUT/session-quant-int4.log 2>&1; echo "int4 rc $?"
grep "graph" $OUT/session-quant-int4.log | sed -E 's/ +\|.*//' | cut -c1-150 | tail -6
python -c "import json; d = json.load(open('/tmp/cache/autotune-nvidia-h200-triton-3.6.0.json'))
[print(k.split('|')[1:5], v.get('PREFETCH', 0), v.get('SPLIT_K'), v.get('num_warps')) for k, v in d.items() if 'chain' in k]"
tar czf $OUT/tuner-cache.tgz -C /tmp/cache .
rm -f $OUT/results/*.csv $OUT/*.csv
