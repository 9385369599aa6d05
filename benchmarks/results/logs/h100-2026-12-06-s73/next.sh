# For session 74's first call (~4 min; ~8 on an H200; session 73's call c, never run: every start after call b2 was
# refused): test_moe whole with INT4_DOWN_AHEAD's rule shipped (item 530: two k-steps of down's weights ahead, a
# register cap of 80, where a down range is 32 k-steps or more; only call b's pair mma tests ran it on a GPU, forced)
# and INT4_K_WARPS_CHUNKED's GPU test case (item 532, untimed); INT4_K_WARPS_CHUNKED off / on twice in alternation at
# one / two / four tokens of Qwen3-30B-A3B's and one of gpt-oss-20b's (predicted: Qwen3's one token 1-2 us faster);
# the int4 registry rows (two / four tokens of Mixtral's take item 530); on an H200 also the bf16 / int8 / fp8 rows
# and the Mixtral-shaped model.
set -x
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 150 python benchmarks/exp_moe_launch.py $OUT/w/chunked --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --k-chunked 0,1,0,1 --cases 1x128x8x2048x768,2x128x8x2048x768,4x128x8x2048x768,1x32x4x2880x2880 \
  2>&1 | grep -v Warn > $OUT/w/chunked.txt
grep "rooftop mma" $OUT/w/chunked.txt
OPS=moe_experts_int4; case $GPU in *H200*) OPS="moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8";; esac
for op in $OPS; do timeout 60 python -m rooftop bench $op --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn \
  > $OUT/w/bench-$op.txt; grep "│ moe" $OUT/w/bench-$op.txt; done
case $GPU in *H200*) ROOFTOP_AUTOTUNE=0 timeout 150 python benchmarks/e2e_decode.py $OUT/w/e2e --graphs --cache-len 4096 \
  --moe --int8 --layers 4 --repeats 1 2>&1 | grep -v Warn > $OUT/w/e2e.txt; tail -10 $OUT/w/e2e.txt;; esac
(cd $OUT && tar czf all.tgz w && rm -rf w)
