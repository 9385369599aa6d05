# run-a.sh cut to ~2 minutes for the ~250 s of budget left after seven refused starts: INT4_K_WARPS_CHUNKED off / on
# and INT4_GATE_UP_AHEAD 1 / 4 at one token of Qwen3-30B-A3B's and of gpt-oss-20b's, then the per-pair mma GPU tests.
set -x
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W
pack() { tar czf $OUT/all.tgz -C /tmp w; }
timeout 100 python benchmarks/exp_moe_launch.py $W/chunked --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --k-chunked 0,1 --gate-up-ahead 1,4 --cases 1x128x8x2048x768,1x32x4x2880x2880 2>&1 \
  | grep -v Warn > $W/chunked.txt
grep "rooftop mma" $W/chunked.txt; pack
timeout 80 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "gpu_int4_pair_mma" \
  > $W/tests-mma.txt 2>&1
tail -1 $W/tests-mma.txt; grep -n "FAILED\|Error" $W/tests-mma.txt | head -20; pack
