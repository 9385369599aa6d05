# session 26, call 1: the quant GPU tests with PDL on (pdl chain, x_asm, slices, plan reuse, mma GEMV; every M = 1
# candidate), then PDL timed on the mma (M = 16) and tensor-core (M = 16 / 64) paths
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 280 python -m pytest tests/test_quant_matmul.py -q -p no:cacheprovider -rf \
  -k "pdl or x_asm or slices or plan_reuse or mma_gemv" > $OUT/tests/pdl-xasm.txt 2>&1
tail -1 $OUT/tests/pdl-xasm.txt; grep -E "^(FAILED|E )" $OUT/tests/pdl-xasm.txt | head -8 | cut -c1-200
timeout 80 python -m pytest "tests/test_quant_matmul.py::test_every_candidate_gpu[1]" -q -p no:cacheprovider -rf \
  > $OUT/tests/every-candidate-m1.txt 2>&1
tail -1 $OUT/tests/every-candidate-m1.txt; grep -E "^(FAILED|E )" $OUT/tests/every-candidate-m1.txt | head -5 | cut -c1-200
for m in 16 64; do
  timeout 90 python benchmarks/exp_gemv_pdl.py $OUT/m$m --m $m > $OUT/exp-gemv-pdl-m$m.log 2>&1; echo "m$m rc $?"
  tail -12 $OUT/exp-gemv-pdl-m$m.log | cut -c1-160
done
