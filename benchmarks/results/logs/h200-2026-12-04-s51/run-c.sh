# Session 51, call c: call b again after clear_plans reaches matmul._plans: every tuner candidate of matmul at
# 512 x 10240 x 8192 and 512 x 28672 x 4096, forced, in alternating bursts with the tuned choice and cuBLAS.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
for shape in 10240x8192 28672x4096; do
  timeout 270 python benchmarks/exp_gemm_bursts.py $OUT/w/cand-$shape --m 512 --shapes $shape --rounds 6 \
    --candidates 2>&1 | grep -v Warn > $OUT/w/exp-gemm-candidates-$shape.log
  tail -30 $OUT/w/exp-gemm-candidates-$shape.log
done
tar czf $OUT/call-c.tgz -C $OUT w
