# Prepared in session 61 for the next (~4 min): exp_moe_grouped.py, moe_experts with each routed expert read once a
# step (the first pair routed to an expert does the work of all its pairs; tl.dot over a group of up to 16 pairs),
# four launches, beside moe_experts and transformers' grouped_mm, at Mixtral-8x7B's and Qwen3-30B-A3B's experts, 1-16
# tokens, round-robin and random routing; errors checked after the replays too (the arrival counters). Predicted
# (H200): 8 tokens of Mixtral 66% -> 85-90% of the once-an-expert floor; 16 tokens of Qwen3 with random routing ~1.4x
# moe_experts; 1 token within 5% of moe_experts. Then: wire it into ops/moe.py where it wins (one path if it also
# holds at 1 token), tests from its --check cases.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 330 python benchmarks/exp_moe_grouped.py $OUT/w 2>&1 | grep -v Warn | tee $OUT/w/exp.txt | tail -60
tar czf $OUT/call-s.tgz -C $OUT w
