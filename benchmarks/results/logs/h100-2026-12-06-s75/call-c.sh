# Session 75 call c (~2 min): the sorted path's layout in three kernels (journal item 538: counts a chunk, their
# running sums, each chunk sorted into its slots; no (k T)^2 reads) against call b's one kernel (106.6 / 116.1 /
# 259.1 / 1184.8 us at 512 / 4096 / 32768 / 131072 tokens of Qwen3's, 10.2 / 88.0 / 114.6 / 234.2 of Mixtral's).
# Predicted: 10-20 us to 4096 tokens, 25-40 at 32768, 60-100 at 131072 of Qwen3's. Its GPU tests first.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "sorted or prefill" 2>&1 \
  | grep -v Warn | tail -4
timeout 240 python benchmarks/exp_moe_prefill.py $OUT/w/layout --layout --names qwen3,mixtral \
  --tokens 512,4096,32768,131072 --slots-chunks 128,256,512,1024 2>&1 | grep -v Warn | tail -32
