# Session 77's call d (~3 min; ~7 on an H200; one tarball $OUT/d.tgz): where gpt-oss's window attention waits (ncu:
# the packed-head kernel tuned first, then PC sampling); on an H200 also the MoE registry rows in four formats.
set -x
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/d; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/d.tgz -C /tmp d; }
python -c "import ncu_pc_sampling as n; n.kernels('attention_window128')" 2>&1 | grep -v Warn | tail -3
timeout 200 python benchmarks/ncu_pc_sampling.py $W/ncu attention_window128 2>&1 | tail -40 > $W/ncu.txt
rm -f $W/ncu/*.ncu-rep; grep -A3 "Duration\|DRAM Throughput\|Achieved Occupancy\|Registers Per\|L2 Hit\|Theoretical Occ\|Block Limit" \
  $W/ncu/details-attention_window128.txt | head -60; cat $W/ncu.txt | tail -28; pack
case $GPU in *H200*) for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do
  timeout 55 python -m rooftop bench $op --providers rooftop --out $W/moe 2>&1 | grep -v Warn > $W/bench-$op.txt
  grep "│ moe" $W/bench-$op.txt; pack; done;; esac
