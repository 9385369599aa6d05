# session 22, call 2: the Gluon norms' weight and bias kept in L1 by a smaller ring (exp_norm_l1_params.py)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 400 python benchmarks/exp_norm_l1_params.py $OUT > $OUT/exp-norm-l1-params.log 2>&1
tail -8 $OUT/exp-norm-l1-params.log
grep -i "error\|Traceback" $OUT/exp-norm-l1-params.log | head -5
