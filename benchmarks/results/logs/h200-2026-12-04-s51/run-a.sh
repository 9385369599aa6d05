# Session 51, call a: bias_gelu's kernel variants (exp_bias_gelu.py: diagonal column blocks, no cap on |x|, the tanh
# form), then the M = 512 GEMMs against cuBLAS in alternating bursts, twice (exp_gemm_bursts.py, session 50's Next 1).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 100 python benchmarks/exp_bias_gelu.py $OUT/w 2>&1 | grep -v Warn > $OUT/w/exp-bias-gelu.log
tail -7 $OUT/w/exp-bias-gelu.log
for run in 1 2; do
  timeout 230 python benchmarks/exp_gemm_bursts.py $OUT/w/bursts-$run --m 512 --rounds 8 --seconds 3 2>&1 \
    | grep -v Warn > $OUT/w/exp-gemm-bursts-$run.log
  tail -12 $OUT/w/exp-gemm-bursts-$run.log
done
tar czf $OUT/call-a.tgz -C $OUT w
