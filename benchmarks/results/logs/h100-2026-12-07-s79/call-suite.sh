# Session 79: the pytest suite on the GPU less its five heaviest files (session 72's second half: test_plans,
# test_compile, test_matmul, test_quant_matmul and test_attention left out; 252 s there at -n 14; test_attention ran
# in call c), -n 16, slow tests too; failures and the last lines in one tarball $OUT/s.tgz.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/s; mkdir -p $W; echo $GPU > $W/gpu.txt
timeout 420 python -m pytest -q -p no:logging --tb=line -n 16 tests --ignore=tests/test_plans.py \
  --ignore=tests/test_compile.py --ignore=tests/test_matmul.py --ignore=tests/test_quant_matmul.py \
  --ignore=tests/test_attention.py > $W/suite.txt 2>&1; echo rc=$? >> $W/suite.txt
tail -3 $W/suite.txt; grep -E "^(FAILED|ERROR)" $W/suite.txt | head -30; tar czf $OUT/s.tgz -C /tmp s
