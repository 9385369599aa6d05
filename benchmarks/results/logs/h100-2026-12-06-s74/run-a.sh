# Never ran: its starts were refused; run-a2.sh (a short cut of it) ran as call a2. Its --k-chunked and --gate-up-ahead
# were taken out after call a2 (git 598f2a7 has them).
# Session 74's first call (session 73's next.sh, re-cut for ~430 s of budget left after six refused starts: one
# tarball rewritten after each step, so a call cut by its limit keeps what ran). INT4_K_WARPS_CHUNKED off / on and
# INT4_GATE_UP_AHEAD 1 / 4 (item 534), twice in alternation, at one / two / four tokens of Qwen3-30B-A3B's and one of
# gpt-oss-20b's (predicted: Qwen3's one token 16.0 -> 14-15 us with either); then the per-pair mma GPU tests (items
# 530, 532, 534), then test_moe whole.
set -x
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W
pack() { tar czf $OUT/all.tgz -C /tmp w; }
timeout 200 python benchmarks/exp_moe_launch.py $W/chunked --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --k-chunked 0,1,0,1 --gate-up-ahead 1,4 \
  --cases 1x128x8x2048x768,2x128x8x2048x768,4x128x8x2048x768,1x32x4x2880x2880 2>&1 | grep -v Warn > $W/chunked.txt
grep "rooftop mma" $W/chunked.txt; pack
timeout 100 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "gpu_int4_pair_mma" \
  > $W/tests-mma.txt 2>&1
tail -1 $W/tests-mma.txt; grep -n "FAILED\|Error" $W/tests-mma.txt | head -20; pack
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $W/tests.txt 2>&1
tail -1 $W/tests.txt; grep -n "FAILED\|Error" $W/tests.txt | head -20; pack
