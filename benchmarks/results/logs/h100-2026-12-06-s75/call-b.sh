# Session 75 call b (~2 min): the sorted path's layout kernel at prefill sizes (NOTES' Next item 3: each program reads
# all k T indices, ~(k T)^2 / 4096 reads; "~1 ms at 256K pairs, untimed"). Predicted: under 1% of the op at 4096
# tokens, 3-10% at 32768 tokens of Qwen3-30B-A3B's (262144 pairs); if over 3% there, a two-pass layout.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 240 python benchmarks/exp_moe_prefill.py $OUT/w/layout --layout --names qwen3,mixtral \
  --tokens 512,4096,32768,131072 2>&1 | grep -v Warn | tail -12
