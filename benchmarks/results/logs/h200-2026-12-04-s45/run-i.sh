# Session 45, call i: LayerNorm's whole rows past 40960 without a residual on 8-warp consumers (layer_norm.
# GLUON_WIDE_MIN_N, GLUON_WIDE_WARPS; call h): the Gluon LayerNorm GPU tests, the layer_norm results row at 65536.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 110 python -m pytest -q -n 8 tests/test_layer_norm.py -k "gluon or dispatch" -p no:logging 2>&1 | tail -3 \
  | tee $OUT/w/tests-ln.log
timeout 90 python benchmarks/gpu_session.py $OUT/w/session --families layer_norm --ops layer_norm --widths 65536 \
  --no-ncu > $OUT/w/session-ln.log 2>&1; grep -E "^layer_norm .*GB/s" $OUT/w/session-ln.log; tail -1 $OUT/w/session-ln.log
tar czf $OUT/call-i.tgz -C $OUT w
