# Session 61 (prepared in session 60) (~5 min): rooftop.moe_experts (ops/moe.py, journal item 413), its first
# GPU run: 1. its GPU tests (model sizes, the patched Mixtral) and the integration tests; 2. exp_moe_launch.py: seven
# launch shapes of its two GEMV kernels at Mixtral-8x7B's and Qwen3-30B-A3B's experts, 1 and 4 tokens, beside
# transformers' grouped_mm experts and eager loop; 3. the registry's rows (gpu_session, family moe: rooftop, eager,
# torch.compile, grouped_mm; the loops synchronise the host: no graph time, the sweep says so). Predicted: 80-90% of
# copy at Mixtral's shape, 60-75% at Qwen3's; several x the loops at 1-4 tokens; the tests pass. Then wire the
# best launch (GATE_UP_LAUNCH / DOWN_LAUNCH) and merge the rows.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py tests/test_integrations.py 2>&1 \
  | grep -v Warn | tail -5
timeout 200 python benchmarks/exp_moe_launch.py $OUT/w 2>&1 | grep -v Warn | tail -40
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families moe --no-ncu 2>&1 | grep -v Warn | tail -14
tar czf $OUT/call-n.tgz -C $OUT w
