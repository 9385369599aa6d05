# Session 63, call e: patch_model's experts now take moe_experts while the grouped path takes the call (k T <= 256,
# moe.kernels_take; journal 459): test_moe and test_integrations on the GPU, then the Mixtral-shaped model (4 layers,
# prompt 128 = 256 pairs: now the kernels at prefill too) with --fp8 --int8. Predicted: tests pass; the quantized
# models' prefill 60-62 ms -> 8-15 ms (call d), bf16's 7.0 -> 5-7 ms; decode as call d's (590 / 793 / 763 tok/s).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py tests/test_integrations.py 2>&1 \
  | grep -v Warn | tail -5
timeout 250 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --moe --no-int4 --fp8 --int8 \
  --layers 4 --repeats 1 2>&1 | grep -v Warn | tail -9
tar czf $OUT/call-e.tgz -C $OUT w
