# Session 50, call d: exp_gemm_pdl.py again, each case timed off / on four times in turn (call c read PDL slower at
# the large matmul shapes, faster at the small ones; noise or not).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 400 python benchmarks/exp_gemm_pdl.py $OUT/w --matmul-m 512 --quant-m 64,256 \
  --order off,on,off,on,off,on,off,on 2>&1 | grep -v Warn > $OUT/w/exp-gemm-pdl.log
tail -18 $OUT/w/exp-gemm-pdl.log
tar czf $OUT/call-d.tgz -C $OUT w
