# For session 69's first call (not yet run: session 68's device time ran out). 1. test_moe whole: the
# per-pair kernels' AHEAD path (x and the weights a k-tile ahead in registers), PER_PAIR_STAGES' 16-bit entry (2, 2)
# and test_per_pair_pipelines' 64-column launches have run on the CPU interpreter only. 2. AHEAD timed: offline the
# per-pair int4 loop waits on x's L2 load each k-tile (LDG x -> STSM -> BAR -> LDS before the first FFMA); session 68's
# AHEAD with the weights alone gave nothing (item 500). Predicted: int4 one token of Mixtral's ~99 -> 75-85 us,
# Qwen3's 4 tokens 55 -> 45-50; int8 / bf16 AHEAD against their stages. If AHEAD wins: set PER_PAIR_STAGES' entry,
# then the registry rows (bench moe_experts_int4 / _int8) and the Mixtral-shaped model (e2e_decode.py --moe --int8).
# 3. ncu PC sampling of the shipped int4 per-pair kernels (ncu_pc_sampling.py moe_int4_gate_up,moe_int4_down): which
# stall holds them (~7 minutes in all).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED" $OUT/w/tests.txt | head
timeout 100 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --per-sm 16,32 --launches 8x256x2 \
  --stages 1/1,1/1a 2>&1 | grep -v Warn > $OUT/w/int4.txt
timeout 50 python benchmarks/exp_moe_launch.py $OUT/w/int8 --quant int8 --per-sm 4 --launches 8x256x2 \
  --stages 3/3,1/1a 2>&1 | grep -v Warn > $OUT/w/int8.txt
timeout 50 python benchmarks/exp_moe_launch.py $OUT/w/bf16 --per-sm 4 --launches 8x256x2 \
  --stages 2/2,1/1a 2>&1 | grep -v Warn > $OUT/w/bf16.txt
grep rooftop $OUT/w/int4.txt $OUT/w/int8.txt $OUT/w/bf16.txt | grep -v "^bf16.txt:[14]x8x2" | sed 's/.*w\///'
timeout 200 python benchmarks/ncu_pc_sampling.py $OUT/w/pc moe_int4_gate_up,moe_int4_down > $OUT/w/pc.txt 2>&1
(cd $OUT/w && tar czf ../pc.tgz pc && rm -rf pc)
grep -A12 "^== " $OUT/w/pc.txt
