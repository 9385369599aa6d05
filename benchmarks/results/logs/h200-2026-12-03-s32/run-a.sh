# session 32, call a: the reload softmax experiment (16384-65536); end to end over a 4096 cache with lm_head int8 / int4
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
timeout 170 python benchmarks/exp_reload_softmax.py $OUT > $OUT/exp-reload-softmax.log 2>&1
echo "exp rc $?"; grep -v "Warn\|warn" $OUT/exp-reload-softmax.log | tail -5 | cut -c1-400
timeout 330 python benchmarks/e2e_decode.py $OUT --graphs --cache-len 4096 --lm-head-bits 8,4 --repeats 3 \
    > $OUT/e2e-graphs-4096.log 2>&1; echo "e2e 4096 rc $?"; tail -10 $OUT/e2e-graphs-4096.log | cut -c1-170
tar czf $OUT/tuner-cache.tgz -C /tmp/cache .
rm -f $OUT/*.csv
