# session 38, call b (~8 minutes): NOTES item 244, pass 2's w and b past L1 (ld.cg) in LayerNorm's Welford kernel
# and RMSNorm's reload kernel, at one and two programs an SM; item 245, LayerNorm's rows past 65536 split into
# chunks a program each (the Welford kernel's SPLIT); items 246-247, softmax's and RMSNorm's reload kernels split
# so; then the results rows with the predicted winners set (gpu_session.py --set; kept only if the experiments agree).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/ln $W/rms $W/split $W/session-ln $W/session-rows
timeout 170 python benchmarks/exp_reload_one_program.py $W/ln --ops layer_norm,add_layer_norm \
    --widths 24576,32768,40960,49152,65536 > $W/ln/log.txt 2>&1; echo "ln experiment rc $?"
sed -n '/^copy/,$p' $W/ln/log.txt
timeout 150 python benchmarks/exp_reload_one_program.py $W/split \
    --ops layer_norm_split,softmax_split,rms_norm_split,add_rms_norm_split --widths 65536,131072,262144 \
    > $W/split/log.txt 2>&1; echo "split experiment rc $?"; sed -n '/^copy/,$p' $W/split/log.txt
timeout 50 python benchmarks/exp_reload_one_program.py $W/rms --ops rms_norm,add_rms_norm --widths 32768,65536 \
    > $W/rms/log.txt 2>&1; echo "rms experiment rc $?"; sed -n '/^copy/,$p' $W/rms/log.txt
SET="--set layer_norm.WELFORD_PARAM_POLICY='l2' --set layer_norm.WELFORD_WIDE_MAX_N=65536
     --set layer_norm.WELFORD_ONE_PROGRAM_MIN_N=40960 --set layer_norm.WELFORD_SPLIT_CHUNK=65536
     --set softmax.RELOAD_SPLIT_BYTES=65536 --set rms_norm.RELOAD_SPLIT_N=65536"
timeout 90 python benchmarks/gpu_session.py $W/session-ln --families layer_norm --ops layer_norm \
    --widths 32768,65536,131072,262144 --no-ncu $SET > $W/session-ln/log.txt 2>&1; echo "session ln rc $?"
grep -E "^set|layer_norm " $W/session-ln/log.txt | tail -16
timeout 110 python benchmarks/gpu_session.py $W/session-rows --families softmax,rms_norm \
    --ops softmax,log_softmax,rms_norm,add_rms_norm --widths 65536,131072,262144 --no-ncu $SET \
    > $W/session-rows/log.txt 2>&1; echo "session rows rc $?"; grep -E "softmax |rms_norm " $W/session-rows/log.txt | tail -24
tar czf $OUT/run-b.tgz -C $OUT w && rm -rf $W
