# Session 60, call l: test_plans' test_fp8_linear_replay[1] failed once (call a1, -n 14: rel_err 1.506e-2 against
# 1.5e-2, passed alone; the bench's error at M = 1 is 2e-3). Hunt: six copies of stress_fp8_linear.py at once
# (every forced split-K candidate and the tuner's, fresh x each call, checked against float64; PDL on / off; N = 96
# ragged and 4096 even) while test_plans.py runs three times with 8 workers. Predicted: if it is a race (split-K
# arrival or PDL) some candidate shows bad calls under contention, with PDL or without; if none shows, the failure
# was a one-off of the test's (a reference tie?) and the stress says how rare.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
S="timeout 200 python benchmarks/stress_fp8_linear.py $OUT/w/stress"
for i in 1 2 3; do $S --iters 3000 > $OUT/w/stress-pdl-$i.txt 2>&1 & done
$S --iters 3000 --no-pdl > $OUT/w/stress-nopdl.txt 2>&1 &
$S --iters 3000 --shape 16x96x256 > $OUT/w/stress-m16.txt 2>&1 &
$S --iters 1000 --shape 1x4096x4096 > $OUT/w/stress-4096.txt 2>&1 &
for i in 1 2 3; do
  timeout 150 python -m pytest -q -p no:logging --tb=line -n 8 tests/test_plans.py 2>&1 | grep -v Warn | tail -3
done
wait
grep -h "pdl=" $OUT/w/stress-*.txt | cut -c1-250
tar czf $OUT/call-l.tgz -C $OUT w
