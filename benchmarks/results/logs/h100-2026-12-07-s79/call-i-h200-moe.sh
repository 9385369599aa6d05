# Session 79's last call (~4 min on an H200 only; exits at once on any other card): the MoE registry rows in four
# formats (call-h200.sh's first part), within the ~400 s of budget left.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
case $GPU in *H200*) ;; *) echo "not an H200: nothing run"; exit 0;; esac
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/h; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/h.tgz -C /tmp h; }
for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do
  timeout 55 python -m rooftop bench $op --providers rooftop --out $W/moe 2>&1 | grep -v Warn > $W/bench-$op.txt
  grep "│ moe" $W/bench-$op.txt; pack; done
