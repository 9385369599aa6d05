# Session 78's first call (~6 min; one tarball $OUT/a.tgz rewritten after each step): item 543's single-loop window
# tiles, their GPU tests and every candidate timed (s77's call-e); if a single-loop form leads at every S, the flag is
# flipped on the device's copy, the window tests rerun with it on and the attention_sinks family measured.
set -x
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/a; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/a.tgz -C /tmp a; }
timeout 70 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_attention.py -k "packed or single" \
  > $W/tests.txt 2>&1; tail -1 $W/tests.txt; grep FAILED $W/tests.txt | head; pack
timeout 170 python benchmarks/exp_attention_window.py $W --seqs 512,16384 2>&1 | grep -v Warn > $W/exp.txt
tail -3 $W/exp.txt; pack
WIN=$(python -c "import json; r = [x for x in json.load(open('$W/exp-attention-window.json'))['rows']
  if 'us' in x and x['rel_err'] < 2e-2]
print(all(min((x for x in r if x['S'] == S), key=lambda x: x['us'])['single_loop'] for S in {x['S'] for x in r}))")
echo single-loop leads: $WIN
grep -q " passed" $W/tests.txt && ! grep -q "failed\|error" $W/tests.txt && [ "$WIN" = True ] || exit 0
sed -i 's/^SINGLE_LOOP_WINDOWED = False/SINGLE_LOOP_WINDOWED = True/' src/rooftop/ops/attention.py
grep -n "^SINGLE_LOOP_WINDOWED" src/rooftop/ops/attention.py
timeout 90 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_attention.py tests/test_integrations.py \
  -k "window or sink or packed or single or gpt_oss" > $W/tests-on.txt 2>&1; tail -1 $W/tests-on.txt
grep FAILED $W/tests-on.txt | head; pack
timeout 110 python benchmarks/gpu_session.py $W/sinks --families attention_sinks --no-ncu 2>&1 | grep -v Warn \
  > $W/sinks.txt; tail -12 $W/sinks.txt; pack
