# session 35, call b: GPU tests of apply_rope_append_kv (RoPE + the static-cache append in one kernel), the HF
# integration and the reductions (argmax rows up to 512 in 2-warp programs); end to end over a 4096 cache with the
# RoPE and cache update fused or apart (session 33 call d's e2e tuner cache)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
for t in test_rope test_integrations test_reductions; do
    timeout 120 python -m pytest -q -p no:cacheprovider tests/$t.py > $OUT/tests/$t.txt 2>&1
    echo "$t rc $?: $(tail -1 $OUT/tests/$t.txt)"; grep "^FAILED" $OUT/tests/$t.txt | cut -c1-200 | head
done
timeout 60 python -m pytest -q -p no:cacheprovider tests/test_decode_attention.py -k append > $OUT/tests/append.txt 2>&1
echo "append rc $?: $(tail -1 $OUT/tests/append.txt)"
mkdir -p /tmp/e2e && tar xzf benchmarks/results/logs/h200-2026-12-03-s33/call-d/tuner-cache-e2e.tgz -C /tmp/e2e
ROOFTOP_CACHE_DIR=/tmp/e2e timeout 300 python benchmarks/e2e_decode.py $OUT --graphs --cache-len 4096 --repeats 2 \
    --rope-append-ab > $OUT/e2e-graphs-4096.log 2>&1; echo "e2e 4096 rc $?"; tail -9 $OUT/e2e-graphs-4096.log | cut -c1-170
rm -f $OUT/*.csv
