# Prepared in session 54 (no machine lent; loans paused), for the next session, on main with branch epilogue-activate
# merged (`git merge epilogue-activate`: clean). Session 53's one call (the whole suite, -n 14, ~8 min) ran ~517 s
# and the machine stopped answering with nothing returned; so the suite is cut into two calls of ~4 min: this one the
# GEMM-like ops and the tests of NOTES items 357-359 (test_plans' replay in a new thread, test_compile's dynamic
# shapes), a per-test limit so that a hung test cannot eat the call. Then run-a2.sh (the row ops and the rest).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/w/gpu.txt
timeout 300 python -m pytest -q -n 14 --timeout 200 -p no:logging --tb=line --durations=15 tests/test_plans.py \
  tests/test_compile.py tests/test_matmul.py tests/test_quant_matmul.py tests/test_attention.py 2>&1 | grep -v Warn \
  > $OUT/w/gpu-tests-a1.txt
tail -25 $OUT/w/gpu-tests-a1.txt
tar czf $OUT/call-a1.tgz -C $OUT w
