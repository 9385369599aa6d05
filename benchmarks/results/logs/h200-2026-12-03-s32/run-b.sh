# session 32, call b: the GEMV's words prefetched into L2 before its PDL wait (exp_gemv_pdl --prefetch);
# end to end over a 4096 cache with lm_head int8 / int4 (call a's e2e failed in its report: weight_bytes)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-03-s32/call-a/tuner-cache.tgz -C /tmp/cache
A="(128, 4, 4, 7, 1, 72, 4, True, True)"; B="(128, 4, 4, 4, 1, 72, 4, True, True)"
timeout 200 python benchmarks/exp_gemv_pdl.py $OUT --bits 4 --config "$A" --config "$B" --prefetch 1,4 \
    > $OUT/exp-gemv-prefetch-int4.log 2>&1; echo "int4 rc $?"; grep "^int" $OUT/exp-gemv-prefetch-int4.log | cut -c1-120
timeout 100 python benchmarks/exp_gemv_pdl.py $OUT --bits 8 --config "$A" --prefetch 1,4 \
    > $OUT/exp-gemv-prefetch-int8.log 2>&1; echo "int8 rc $?"; grep "^int" $OUT/exp-gemv-prefetch-int8.log | cut -c1-120
timeout 200 python benchmarks/e2e_decode.py $OUT --graphs --cache-len 4096 --lm-head-bits 8,4 --repeats 3 \
    > $OUT/e2e-graphs-4096.log 2>&1; echo "e2e 4096 rc $?"; tail -10 $OUT/e2e-graphs-4096.log | cut -c1-170
rm -f $OUT/*.csv
