# Session 68 call d (~5 min): 1. GPU tests of the per-pair kernels' pipelines (PER_PAIR_PIPELINE (3, 3) now shipped
# for 16-bit and one-byte experts; the new test_per_pair_pipelines). 2. AHEAD (weights a k-tile ahead in registers,
# 80 registers a thread for int4 against 72 / 64; offline SASS: the next tile's loads issued before the FFMAs) for
# int4: predicted one token of Mixtral's 93.9 -> 75-85 us (two loads in flight a thread where one was). 3. int8 /
# fp8 / bf16 at 3/3 (shipped) against 1/1a; fp8 1/1 against 3/3 (call c timed int8 only).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "pipelines or quantized or int4 or \
  matches_reference or split" > $OUT/w/tests.txt 2>&1; tail -1 $OUT/w/tests.txt; grep -n "FAILED" $OUT/w/tests.txt | head
timeout 130 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --per-sm 8,16,32 --launches 8x256x2 \
  --stages 1/1,1/1a 2>&1 | grep -v Warn > $OUT/w/int4.txt
timeout 70 python benchmarks/exp_moe_launch.py $OUT/w/int8 --quant int8 --per-sm 4 --launches 8x256x2 \
  --stages 3/3,1/1a 2>&1 | grep -v Warn > $OUT/w/int8.txt
timeout 70 python benchmarks/exp_moe_launch.py $OUT/w/fp8 --quant fp8 --per-sm 4 --launches 8x256x2 \
  --stages 1/1,3/3,1/1a 2>&1 | grep -v Warn > $OUT/w/fp8.txt
timeout 60 python benchmarks/exp_moe_launch.py $OUT/w/bf16 --per-sm 4 --launches 8x256x2 \
  --stages 3/3,2/2,1/1a 2>&1 | grep -v Warn > $OUT/w/bf16.txt
grep rooftop $OUT/w/int4.txt $OUT/w/int8.txt $OUT/w/fp8.txt $OUT/w/bf16.txt | grep -v "^bf16.txt:[14]x8x2" \
  | sed 's/.*w\///'
