export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W
S=14336x256,14336x4096,28672x8192,4096x4096
V=rs_m64n128_s8_sk,rs_m64n128_s8
for p in none no_atomic; do
python benchmarks/exp_gluon_quant_rs.py $W/$p --batches 64 --variants $V --probe $p --shapes $S --budget 80 > $OUT/exp-quant-sk-probe-$p.log 2>&1
done
timeout 300 python benchmarks/exp_row_parts.py $W/rows --ops layer_norm,rms_norm,add_layer_norm,add_rms_norm --widths 32768,65536 --variants library,a2 > $OUT/exp-row-ahead.log 2>&1
cp $W/rows/*.json $OUT/ 2>/dev/null
tail -7 $OUT/exp-quant-sk-probe-*.log; tail -25 $OUT/exp-row-ahead.log
