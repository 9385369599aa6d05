# Session 79's H200 call (~10 min; one tarball $OUT/h.tgz rewritten after each step; exits at once on any other card):
# the MoE registry rows in four formats (s77 call-d's last part), the Mixtral-shaped model, fp8_linear at decode M and
# the prefill route's A/B (s77 call-b without its attention_sinks part): none has H200 figures yet. On any other card
# (calls d and e): where the tuned window-128 attention kernel spends its time, ncu; ON_OTHER_CARD=exit: nothing.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/h; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/h.tgz -C /tmp h; }
case $GPU in *H200*) ;; *)
  [ "$ON_OTHER_CARD" = exit ] && { echo "not an H200: nothing run"; exit 0; }
  python -c "import ncu_pc_sampling as n; n.kernels('attention_window128')" 2>&1 | grep -v Warn | tail -3
  timeout 200 python benchmarks/ncu_pc_sampling.py $W/ncu attention_window128 2>&1 | tail -40 > $W/ncu.txt
  rm -f $W/ncu/*.ncu-rep; grep -i "throughput\|Duration\|Occupancy\|Registers Per\|L2 Hit\|Block Limit\|Pipe\|Issue" \
    $W/ncu/details-attention_window128.txt | head -60; tail -28 $W/ncu.txt; pack; exit 0;; esac
set -x
for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do
  timeout 55 python -m rooftop bench $op --providers rooftop --out $W/moe 2>&1 | grep -v Warn > $W/bench-$op.txt
  grep "│ moe" $W/bench-$op.txt; pack; done
ROOFTOP_AUTOTUNE=0 timeout 140 python benchmarks/e2e_decode.py $W/e2e --graphs --cache-len 4096 \
  --moe --int8 --layers 4 --repeats 1 2>&1 | grep -v Warn > $W/e2e.txt; tail -10 $W/e2e.txt; pack
timeout 130 python benchmarks/gpu_session.py $W/fp8 --families matmul --ops fp8_linear \
  --providers rooftop,cublas,scaled_mm --no-ncu 2>&1 | grep -v Warn > $W/fp8.txt; tail -16 $W/fp8.txt; pack
timeout 90 python benchmarks/e2e_decode.py $W/p4096 --graphs --cache-len 4200 --no-int4 --layers 8 \
  --prefill-attention-ab --prompt 4096 --new 8 --repeats 2 2>&1 | grep -v Warn > $W/p4096.txt; tail -7 $W/p4096.txt
pack
