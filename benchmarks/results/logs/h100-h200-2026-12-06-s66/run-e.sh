# Session 66, call e. The sorted path's layout (~15 torch ops: argsort, scans, searchsorted) and its final sum are now
# Triton kernels (_sorted_slots_kernel, _sum_pairs_kernel): a prefill's moe_experts call has no torch op left and
# replays as a plan from its second call of a shape. Call d (H100, torch.profiler over one prefill of the gpt-oss-shaped
# model at 256 tokens): rooftop::moe_experts 0.77 ms of its own host time a call (profiled), patched 9.58 ms against
# stock's 8.91 with 1 ms less GPU time. 1. GPU tests: test_moe, test_integrations. 2. gpt-oss-shaped and
# Mixtral-shaped models (4 layers) at 64 / 256 / 2048 tokens: predicted patched at or below stock at 256 now (call c:
# 7.44 against 6.96 ms), 2048 as before (14.4 against 38.8).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 170 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py tests/test_integrations.py \
  > $OUT/w/tests.txt 2>&1; grep -n "^E \|FAILED" $OUT/w/tests.txt | head -20; tail -2 $OUT/w/tests.txt
timeout 220 python benchmarks/exp_moe_prefill.py $OUT/w/models --models --prompts 64,256,2048 \
  2>&1 | grep -v "Warn\|RoPE scaling" > $OUT/w/models.txt
tar czf $OUT/call-e.tgz -C $OUT w
grep "model S" $OUT/w/models.txt
