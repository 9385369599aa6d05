# session 41, call c: probe_gemm_ncu.py --flushes: the GEMM at 512 x 6144 x 4096 (cuBLAS, the library's choice, the
# 128 x 192 variant at 4 and 3 stages) replayed after a zeroing flush, a reading one and none; the kernel's duration.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
timeout 200 python benchmarks/probe_gemm_ncu.py $W --flushes > $W/flushes.txt 2>&1; echo "rc $?"
grep -v Warning $W/flushes.txt | tail -8; tar czf $OUT/run-c.tgz -C $OUT w
