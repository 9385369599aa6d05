# session 32, call c: GEMV PREFETCH candidates: GPU tests (the PDL chain with prefetch 1 / 4, every M = 1 candidate);
# the int8 and int4 batch-1 results rows tuned from an empty cache (the chain tuner among the new candidates)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest -q -p no:cacheprovider tests/test_quant_matmul.py -k "pdl_chain or every_candidate_gpu" \
    > $OUT/tests/quant-pdl.txt 2>&1; echo "tests rc $?: $(tail -1 $OUT/tests/quant-pdl.txt)"; grep "^FAILED" $OUT/tests/quant-pdl.txt | head
for b in 8 4; do
  timeout 200 python benchmarks/gpu_session.py $OUT/results --families quant_matmul --ops quant_matmul_int$b --leading 1 \
      --no-ncu > $OUT/session-quant-int$b.log 2>&1; echo "int$b rc $?"
  grep "graph" $OUT/session-quant-int$b.log | sed -E 's/ +\|.*//' | cut -c1-150 | tail -6
done
python -c "import json; d = json.load(open('/tmp/cache/autotune-nvidia-h200-triton-3.6.0.json'))
[print(k.split('|')[1:5], v.get('PREFETCH', 0), v.get('SPLIT_K'), v.get('num_warps')) for k, v in d.items() if 'chain' in k]"
tar czf $OUT/tuner-cache.tgz -C /tmp/cache .
rm -f $OUT/results/*.csv
python - > $OUT/transformers-static-cache.txt 2>&1 <<'PY'
import inspect, transformers, transformers.cache_utils as cu, transformers.models.llama.modeling_llama as m
print(transformers.__version__)
for f in (cu.StaticLayer.update, cu.StaticLayer.lazy_initialization, cu.StaticCache.__init__, cu.Cache.update,
          m.LlamaAttention.forward):
    print(inspect.getsource(f))
PY
