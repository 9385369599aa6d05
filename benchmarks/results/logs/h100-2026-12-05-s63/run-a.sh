# Session 63, call a (the device came back at 22:15): the GPU tests of what changed and has not run on a GPU —
# test_attention whole (sinks in both kernels, softcap, the plans' new keys and arguments), test_decode_attention
# (sinks, softcap), test_integrations (the SDPA / gpt-oss / Gemma 2 prefill and decode routes), and session 62's
# (test_moe with PDL, test_bench's synchronises_host). Predicted: all pass; the riskiest the Gluon sinks epilogue
# (compiled offline only) and the default-on SDPA prefill route in bf16 tests.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 530 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_attention.py tests/test_decode_attention.py \
  tests/test_integrations.py tests/test_moe.py tests/test_bench.py 2>&1 | grep -v Warn > $OUT/w/pytest.txt
tail -40 $OUT/w/pytest.txt
tar czf $OUT/call-a.tgz -C $OUT w
