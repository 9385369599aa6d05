# Session 75 call c (~3 min): the sorted path's layout in three kernels (journal item 538: counts a chunk, their
# running sums, each chunk sorted into its slots; no (k T)^2 reads) against call b's one kernel (106.6 / 116.1 /
# 259.1 / 1184.8 us at 512 / 4096 / 32768 / 131072 tokens of Qwen3's, 10.2 / 88.0 / 114.6 / 234.2 of Mixtral's).
# Predicted: 10-20 us to 4096 tokens, 25-40 at 32768, 60-100 at 131072 of Qwen3's. With each pair's rows in x's dtype
# (journal item 539: bf16, half fp32's bytes) the whole op at 512 / 4096 / 32768 tokens of Qwen3's 0.587 / 1.092 /
# 6.645 ms (call b) -> ~0.47 / ~0.90 / ~5.7. Its GPU tests first.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "sorted or prefill" 2>&1 \
  | grep -v Warn | tail -4
timeout 240 python benchmarks/exp_moe_prefill.py $OUT/w/layout --layout --names qwen3,mixtral \
  --tokens 512,4096,32768,131072 --slots-chunks 256,1024 2>&1 | grep -v Warn | tail -16
# the prefill models as item 481 timed them (H100: gpt-oss-shaped 6.80 / 15.0 ms at 256 / 2048 tokens, Mixtral-shaped
# 6.82 / 17.5; stock 9.07 / 39.8 and 9.95 / 23.4): 4 MoE layers each, ~0.1 ms of layout a layer before
timeout 120 python benchmarks/exp_moe_prefill.py $OUT/w/models --models --prompts 2048 --repeats 3 2>&1 \
  | grep -v Warn | tail -6
