# session 38, call b (~7 minutes): NOTES item 244, pass 2's w and b past L1 (ld.cg) in LayerNorm's Welford kernel
# and RMSNorm's reload kernel, at one and two programs an SM; item 245, LayerNorm's rows past 65536 split into
# chunks a program each (the Welford kernel's SPLIT); items 246-247, softmax's and RMSNorm's reload
# kernels split so; the GPU tests.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/tests $W/ln $W/rms $W/split
timeout 300 python benchmarks/exp_reload_one_program.py $W/ln --ops layer_norm,add_layer_norm \
    --widths 24576,32768,40960,49152,65536 > $W/ln/log.txt 2>&1; echo "ln experiment rc $?"; sed -n '/^copy/,$p' $W/ln/log.txt
timeout 240 python benchmarks/exp_reload_one_program.py $W/split \
    --ops layer_norm_split,softmax_split,rms_norm_split,add_rms_norm_split \
    --widths 65536,131072,262144 \
    > $W/split/log.txt 2>&1; echo "split experiment rc $?"; sed -n '/^copy/,$p' $W/split/log.txt
timeout 100 python benchmarks/exp_reload_one_program.py $W/rms --ops rms_norm,add_rms_norm --widths 32768,65536 \
    > $W/rms/log.txt 2>&1; echo "rms experiment rc $?"; sed -n '/^copy/,$p' $W/rms/log.txt
timeout -s INT 150 python -m pytest -v -p no:cacheprovider -n 12 --timeout 120 -rfE tests/test_rms_norm.py \
    tests/test_layer_norm.py tests/test_softmax.py -k "gpu or reload or welford or split" > $W/tests/norms.txt 2>&1
echo "norm tests rc $?: $(tail -1 $W/tests/norms.txt)"; grep -E "^(FAILED|ERROR)" $W/tests/norms.txt | cut -c1-200
tar czf $OUT/run-b.tgz -C $OUT w && rm -rf $W
