# Session 79: the whole pytest suite on the GPU (-n 12, slow tests too; ~9 min cap), failures and the last lines in
# one tarball $OUT/s.tgz (last run whole in session 72).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/s; mkdir -p $W; echo $GPU > $W/gpu.txt
timeout 540 python -m pytest -q -p no:logging --tb=line -n 12 tests > $W/suite.txt 2>&1; echo rc=$? >> $W/suite.txt
tail -3 $W/suite.txt; grep -E "^(FAILED|ERROR)" $W/suite.txt | head -30; tar czf $OUT/s.tgz -C /tmp s
