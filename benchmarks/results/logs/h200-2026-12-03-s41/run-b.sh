# session 41, call b: 1. probe_gemm_ncu.py: cuBLAS's kernel and rooftop's at 512 x 6144 x 4096, timed and under
# Nsight Compute; 2. the int4 results rows at batch 64 / 256 again (their do_bench column timed the host path before
# session 37's descriptor cache: 78.7 us at 64 x 4096 x 4096, graph 15.4).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/gemm $W/session
pack() { tar czf $OUT/run-b.tgz -C $OUT w; }
timeout 240 python benchmarks/probe_gemm_ncu.py $W/gemm > $W/gemm/log.txt 2>&1; echo "gemm rc $?"
cat $W/gemm/log.txt | cut -c1-220 | tail -60; pack
timeout 300 python benchmarks/gpu_session.py $W/session --families quant_matmul --ops quant_matmul_int4 --no-ncu \
    --leading 64,256 > $W/session/log.txt 2>&1
echo "session rc $?"; grep -E "^quant_matmul" $W/session/log.txt | cut -c1-140; pack
