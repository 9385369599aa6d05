# Session 50, call g: why matmul lost with PDL (item 337): the SM clock and power draw (nvidia-smi, every 100 ms) while
# a chain of 512 x 28672 x 4096 / 512 x 4096 x 4096 GEMMs replays for 4 s with PDL off / on / off / on.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 170 python benchmarks/exp_gemm_pdl.py $OUT/w --matmul-m 512 --quant-m none --shapes 28672x4096,4096x4096 \
  --order off,on,off,on --clocks 4 2>&1 | grep -v Warn > $OUT/w/exp-gemm-pdl-clocks.log
tail -14 $OUT/w/exp-gemm-pdl-clocks.log
tar czf $OUT/call-g.tgz -C $OUT w
