# Session 68 call g (~3 min): the grouped kernels' int4 k loop (_int4_mma_sums) software-pipelined through shared
# memory (cp.async, STAGES 2-3: two steps in flight where the shipped loads one step ahead into registers; offline
# sm_90 the same ~168-254 registers, LDGSTS in the loop). Predicted: 10-25% at 8 tokens of Mixtral's if the kernel is
# latency-bound as call a says (37-55% of floor). GPU tests of the int4 paths first (the PAIRED path runs on a GPU
# only).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 60 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "int4" > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED" $OUT/w/tests.txt | head
timeout 150 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --tokens 8 2>&1 | grep -v Warn \
  > $OUT/w/grouped.txt
grep "grouped n" $OUT/w/grouped.txt
