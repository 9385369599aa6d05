# Session 67, call d. The grouped kernels' int4 for bf16 x (PAIRED) now run mma.sync m16n8k16 from each lane's own
# registers (_int4_mma_sums: a lane holds 32 k of its two weight rows a tile and of its x row, k permuted in a k16 step
# so that the A fragment is its own code pairs; no shared memory), launch (64, 128, 4). Offline sm_90 Mixtral gate / up
# k-loop: 351 instructions for 128 weights a lane (2.74 a weight; call b's tl.dot tile 5.3, int8's 4.4). 1. GPU tests
# test_moe (int4 grouped: test_quantized_experts' path "grouped", bf16). 2. int4 grouped against a pair a program at
# 4-16 tokens (call b: Mixtral 16 tokens 669 us grouped, 1315 a pair; 8 tokens 667 / 668; Qwen3 grouped 1.7-2.3x
# slower): predicted Mixtral 16 tokens 330-450 us. 3. int4 registry rows.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
grep -n "^E \|FAILED\|Error" $OUT/w/tests.txt | head -30; tail -1 $OUT/w/tests.txt
timeout 90 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --tokens 4,8,16 --quick 2>&1 \
  | grep -v Warn > $OUT/w/grouped.txt
timeout 35 python -m rooftop bench moe_experts_int4 --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn \
  > $OUT/w/bench-int4.txt
tar czf $OUT/call.tgz -C $OUT w
tail -18 $OUT/w/grouped.txt; grep "│ moe" $OUT/w/bench-int4.txt
