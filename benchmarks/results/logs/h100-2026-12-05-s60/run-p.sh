# Session 60, call p (the budget's last ~250 s; a start took ~90 s this session): moe_experts' first GPU contact: its
# tests (model sizes, past 2^31 elements, the patched Mixtral, the sweep's uncapturable provider), then
# exp_moe_launch.py --quick (the shipped launch at one token of Mixtral-8x7B's and of Qwen3-30B-A3B's experts, beside
# transformers' grouped_mm and eager loop). Predicted: tests pass; 75-90% of copy at Mixtral's shape, 60-75% at
# Qwen3's; several x grouped_mm and the loop.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 75 python -m pytest -q -p no:logging --tb=short -n 6 tests/test_moe.py 2>&1 | grep -v Warn > $OUT/w/tests.txt; tail -6 $OUT/w/tests.txt
timeout 60 python benchmarks/exp_moe_launch.py $OUT/w --quick 2>&1 | grep -v Warn | tee $OUT/w/exp.txt | tail -12
