# session 40, call a: LayerNorm's columns kernel (w and b in registers of persistent column-part programs) against
# the library at 32K-256K, with and without a residual; the wide row reductions by do_bench and graph replay;
# RMSNorm's columns kernel (add + RMSNorm + fp8 at 64K-128K), the columns kernels' GPU tests. The archive is
# rewritten after each step (a step cut by the call's limit leaves the earlier ones).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/session $W/cols $W/red
pack() { tar czf $OUT/run-a.tgz -C $OUT w; }
timeout 190 python benchmarks/exp_ln_columns.py $W/cols > $W/cols/log.txt 2>&1; echo "cols rc $?"
tail -12 $W/cols/log.txt; pack
mkdir -p $W/rms; timeout 100 python benchmarks/exp_ln_columns.py $W/rms --ops add_rms_norm_fp8,rms_norm,add_rms_norm \
    --widths 65536,131072 > $W/rms/log.txt 2>&1; echo "rms cols rc $?"
tail -8 $W/rms/log.txt; pack
timeout 140 python benchmarks/exp_reduce_wide.py $W/red > $W/red/log.txt 2>&1; echo "red rc $?"
tail -8 $W/red/log.txt; pack
timeout -s INT 60 python -m pytest -v -p no:cacheprovider -n 8 --timeout 50 -rfE -k columns \
    tests/test_layer_norm.py tests/test_rms_norm.py > $W/columns-tests.txt 2>&1
echo "columns tests rc $?: $(tail -1 $W/columns-tests.txt)"; grep -E "^(FAILED|ERROR)" $W/columns-tests.txt | cut -c1-200
pack
