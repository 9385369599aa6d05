# session 37, call f (what the last device minutes allow): the reload kernels with one program an SM (maxnreg=64)
# at 57344 / 65536, softmax and rms_norm (benchmarks/exp_reload_one_program.py).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 95 python benchmarks/exp_reload_one_program.py $OUT --ops softmax,rms_norm --widths 65536,57344 2>&1 | tail -20
# calls g and h, by hand while the machine was warm:
# timeout 80 python benchmarks/exp_reload_one_program.py $OUT --ops add_rms_norm,layer_norm,rms_norm --widths 65536,32768
# timeout 50 python benchmarks/exp_reload_one_program.py $OUT --ops rms_norm --widths 40960,49152,65536
