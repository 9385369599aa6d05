# Session 52, call a: the GPU tests of session 51's last changes (the alternating harness with one capture a
# provider, the audit's input checks), then the quant_matmul rows at batch 1 and 16 with the alternating harness
# (rooftop, cuBLAS, tinygemm; tuned from an empty cache).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 170 python -m pytest -q -n 14 tests/test_bench.py tests/test_rms_norm.py tests/test_plans.py \
  "tests/test_quant_matmul.py::test_bad_weight_tensors" tests/test_decode_attention.py -k "bad or bench or plans or rms or alternat" \
  -p no:logging --tb=line 2>&1 | grep -v Warn > $OUT/w/gpu-tests-a.txt
tail -8 $OUT/w/gpu-tests-a.txt
timeout 60 python -m pytest -q -n 8 tests/test_layer_norm.py tests/test_attention.py tests/test_quant_matmul.py \
  -k "in_place or bad" -p no:logging --tb=line 2>&1 | grep -v Warn > $OUT/w/gpu-tests-a2.txt
tail -5 $OUT/w/gpu-tests-a2.txt
timeout 330 python benchmarks/gpu_session.py $OUT/w/session --families quant_matmul \
  --ops quant_matmul_int4,quant_matmul_int8 --leading 1,16 --providers rooftop,cublas,tinygemm --no-ncu 2>&1 \
  | grep -v Warn > $OUT/w/session-quant.log
tail -22 $OUT/w/session-quant.log
tar czf $OUT/call-a.tgz -C $OUT w
