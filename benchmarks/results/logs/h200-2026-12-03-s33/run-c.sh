# session 33, call c: row_argmax's bf16 on-chip kernel by one int32 max of (key, column) (GPU tests, its sweep); the
# int8 batch-1 results rows tuned from an empty cache with session 32's PREFETCH candidates (rooftop and cuBLAS only);
# the decode step by part over a 4096 cache (append_kv and row_argmax in it)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 100 python -m pytest -q -p no:cacheprovider tests/test_reductions.py > $OUT/tests/test_reductions.txt 2>&1
echo "tests rc $?: $(tail -1 $OUT/tests/test_reductions.txt)"; grep "^FAILED" $OUT/tests/test_reductions.txt | cut -c1-200 | head
timeout 80 python benchmarks/gpu_session.py $OUT/argmax --families reductions --ops row_argmax --no-ncu \
    > $OUT/session-argmax.log 2>&1; echo "argmax session rc $?"
grep -E "^row_argmax " $OUT/session-argmax.log | sed -E 's/ +\|.*//' | cut -c1-110
timeout 330 python benchmarks/gpu_session.py $OUT/results --families quant_matmul --ops quant_matmul_int8 --leading 1 \
    --providers rooftop,cublas --no-ncu > $OUT/session-quant-int8.log 2>&1; echo "int8 rc $?"
grep "graph" $OUT/session-quant-int8.log | sed -E 's/ +\|.*//' | cut -c1-150 | tail -6
tar czf $OUT/tuner-cache.tgz -C /tmp/cache .
mkdir -p /tmp/e2e && tar xzf benchmarks/results/logs/h200-2026-12-03-s32/call-a/tuner-cache.tgz -C /tmp/e2e
cp benchmarks/results/h200-2026-12-03-e2e_decode_cache4096.json $OUT/e2e-with-step-table.json
ROOFTOP_CACHE_DIR=/tmp/e2e timeout 120 python benchmarks/probe_decode_step.py --cache-len 4096 \
    --merge-into $OUT/e2e-with-step-table.json > $OUT/probe-step-4096.log 2>&1; echo "probe rc $?"
tail -12 $OUT/probe-step-4096.log | cut -c1-160
rm -f $OUT/results/*.csv $OUT/argmax/*.csv $OUT/*.csv
