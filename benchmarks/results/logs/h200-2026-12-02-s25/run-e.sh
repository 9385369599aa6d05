# session 25, calls 5-6 (the warm machine's last ~2 minutes, typed as commands): PDL with the trigger after the wait
# (exp_gemv_pdl.py, plain vs PDL), then the X_ASM / plan GPU tests with GEMV_PDL on (cut by its 62 s limit: 18 passed)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 100 python benchmarks/exp_gemv_pdl.py $OUT/after > $OUT/exp-gemv-pdl-after-int4.log 2>&1; echo "rc $?"
timeout 62 python -m pytest tests/test_quant_matmul.py -q -x -p no:cacheprovider -k "x_asm or plan_reuse" > $OUT/gpu-tests-pdl.txt 2>&1
