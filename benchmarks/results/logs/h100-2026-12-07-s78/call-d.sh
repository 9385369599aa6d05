# Session 77's call d (~6 min; ~9 on an H200; one tarball $OUT/d.tgz): gpt-oss's window attention with every
# candidate forced (single-loop forms too, and those with 2 stages or capped registers: --occupancy), and where its
# tuned kernel waits (ncu: tuned first, then PC sampling); on an H200 also the MoE registry rows in four formats.
set -x
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/d; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/d.tgz -C /tmp d; }
timeout 240 python benchmarks/exp_attention_window.py $W --seqs 16384 --occupancy 2>&1 | grep -v Warn > $W/exp.txt
tail -3 $W/exp.txt; pack
python -c "import ncu_pc_sampling as n; n.kernels('attention_window128')" 2>&1 | grep -v Warn | tail -3
timeout 200 python benchmarks/ncu_pc_sampling.py $W/ncu attention_window128 2>&1 | tail -40 > $W/ncu.txt
rm -f $W/ncu/*.ncu-rep; grep -A3 "Duration\|DRAM Throughput\|Achieved Occupancy\|Registers Per\|L2 Hit\|Theoretical Occ\|Block Limit" \
  $W/ncu/details-attention_window128.txt | head -60; cat $W/ncu.txt | tail -28; pack
case $GPU in *H200*) for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do
  timeout 55 python -m rooftop bench $op --providers rooftop --out $W/moe 2>&1 | grep -v Warn > $W/bench-$op.txt
  grep "│ moe" $W/bench-$op.txt; pack; done;; esac
