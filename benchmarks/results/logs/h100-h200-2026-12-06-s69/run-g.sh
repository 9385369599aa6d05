# Session 69 call g (~3 min; call f, asked of an H200, ran on the warm H100: a repeat of call e's rows, within 0.2%).
# 1. Per-kernel ncu of one cold call of the int4 experts at one token of Mixtral's (s68: the CUDA-core gate / up 59.9
# us at 63% of DRAM, down 41.2 us at 46.5%): the mma kernels with the hint. 2. gpt-oss-20b's one token (call d: the
# mma kernels 47.6 us with the hint, 41.5 without): again, hint on and off, at 1-2 tokens of the three models.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python benchmarks/probe_op_kernels.py moe_experts_int4 1,8,2,4096,14336 moe_experts_int4 4,8,2,4096,14336 \
  2>&1 | grep -v Warn > $OUT/w/probe.txt
cat $OUT/w/probe.txt
timeout 100 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --quick --no-l2-256b --tokens 1,2 \
  2>&1 | grep -v Warn > $OUT/w/grouped.txt
grep "E " $OUT/w/grouped.txt
