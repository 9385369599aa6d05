# Session 62, call b (~6 min): why test_integrations failed on the H100 in call a (25 failed: the reason first), then
# s61's run-s.sh: exp_moe_grouped.py (each routed expert read once a step). Predicted (H100): 8 tokens of Mixtral 66% ->
# 85-90% of the once-an-expert floor; 16 tokens of Qwen3 ~1.4x moe_experts; 1 token within 5% of moe_experts.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 100 python -m pytest -x -q -p no:logging --tb=long tests/test_integrations.py \
  -k "test_norms_swapped_only_where_they_compute_the_same" 2>&1 | grep -v Warn | tail -60 > $OUT/w/fail.txt
head -c 5000 $OUT/w/fail.txt
timeout 330 python benchmarks/exp_moe_grouped.py $OUT/w 2>&1 | grep -v Warn | tee $OUT/w/exp.txt | tail -60
tar czf $OUT/call-b.tgz -C $OUT w
