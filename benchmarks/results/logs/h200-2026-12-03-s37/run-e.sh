# session 37, call e: the whole GPU suite (every Gluon kernel's launch now goes through GluonLaunch's encoded
# descriptors; softmax's reload kernel; layer_norm's wide Welford rows), after a profile of quant_matmul's replays
# at M = 16 (call d: 29.8 us a call from Python against 10.5 on the GPU). One archive comes back.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/tests
timeout 60 python benchmarks/probe_quant_host.py $W --batches 16 --profile-batch 16 > $W/quant-host-16.log 2>&1
echo "quant host rc $?"; tail -3 $W/quant-host-16.log
timeout -s INT 400 python -m pytest -v -p no:cacheprovider -n 12 --timeout 240 -rfE tests/ \
    --junitxml=$W/tests/junit.xml > $W/tests/all.txt 2>&1
echo "suite rc $?: $(tail -1 $W/tests/all.txt)"; grep -E "^(FAILED|ERROR)" $W/tests/all.txt | cut -c1-200 | head -30
tar czf $OUT/call-e.tgz -C $OUT w && rm -rf $W
