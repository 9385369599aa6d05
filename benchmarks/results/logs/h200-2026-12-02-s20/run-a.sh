export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W
S=14336x256,14336x4096,28672x8192,4096x4096
V=rs_m64n128_s8_sk,rs_m64n128_s8
python benchmarks/exp_gluon_quant_rs.py $W/grids --batches 64 --variants $V --grids --shapes $S --budget 120 2>&1 | tail -12 > $OUT/exp-quant-sk-grids.log
for p in none no_atomic; do
python benchmarks/exp_gluon_quant_rs.py $W/$p --batches 64 --variants $V --probe $p --shapes $S --budget 80 2>&1 | tail -8 > $OUT/exp-quant-sk-probe-$p.log
done
timeout 200 python benchmarks/ncu_pc_sampling.py $W/ncu softmax_32768,layer_norm_65536 > $OUT/ncu-rows.log 2>&1
rm -f $W/ncu/*.ncu-rep; gzip $W/ncu/*.csv
tar czf $OUT/w.tgz -C $W .
cat $OUT/exp-quant-sk-grids.log $OUT/exp-quant-sk-probe-*.log; tail -30 $OUT/ncu-rows.log
