# session 37, call b: 1. GPU tests of softmax's reload kernel (and the Gluon tests with it off) and of every Gluon
# kernel's launch since GluonLaunch keeps encoded descriptors per address; 2. the reload kernel's bounds (bf16 and
# fp32); 3. quant_matmul's host path with the descriptor cache on / off; 4. the Welford LayerNorm experiment again,
# each variant with the recorded calls forgotten (call a replayed one variant for all); 5. the softmax results rows at
# 32768 re-measured.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests $OUT/session
timeout -s INT 200 python -m pytest -v -p no:cacheprovider -n 12 --timeout 150 -rfE tests/test_softmax.py \
    tests/test_plans.py -k "gpu or gluon or reload or descriptors or launcher" > $OUT/tests/softmax-plans.txt 2>&1
echo "softmax/plans tests rc $?: $(tail -1 $OUT/tests/softmax-plans.txt)"
timeout -s INT 220 python -m pytest -v -p no:cacheprovider -n 12 --timeout 180 -rfE tests/test_quant_matmul.py \
    tests/test_matmul.py tests/test_attention.py tests/test_rms_norm.py tests/test_layer_norm.py \
    -k "gpu and (gluon or descriptors or pingpong or sm90)" > $OUT/tests/gluon.txt 2>&1
echo "gluon tests rc $?: $(tail -1 $OUT/tests/gluon.txt)"
grep -h -E "^(FAILED|ERROR)" $OUT/tests/*.txt | cut -c1-200 | head -20
timeout 120 python benchmarks/exp_reload_softmax.py $OUT --widths 16400,20480,24576,40960,49152,57344 \
    > $OUT/exp-softmax-bf16.log 2>&1; echo "softmax bf16 rc $?"; sed -n '/^copy/,$p' $OUT/exp-softmax-bf16.log
timeout 60 python benchmarks/exp_reload_softmax.py $OUT --widths 20480,24576,32768 --dtype float32 \
    > $OUT/exp-softmax-fp32.log 2>&1; echo "softmax fp32 rc $?"; sed -n '/^copy/,$p' $OUT/exp-softmax-fp32.log
timeout 100 python benchmarks/probe_quant_host.py $OUT > $OUT/quant-host.log 2>&1; echo "quant host rc $?"
sed -n '/^quant_matmul int4/,$p' $OUT/quant-host.log
timeout 150 python benchmarks/exp_norm_reload.py $OUT --ops layer_norm,add_layer_norm --widths 16384,32768,65536 \
    > $OUT/exp-ln.log 2>&1; echo "layer_norm experiment rc $?"; sed -n '/^copy/,$p' $OUT/exp-ln.log
timeout 100 python benchmarks/gpu_session.py $OUT/session --families softmax --ops softmax,log_softmax \
    --widths 32768 --no-ncu > $OUT/session/log.txt 2>&1; echo "session rc $?"; tail -8 $OUT/session/log.txt
