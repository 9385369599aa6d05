# Session 75 call c2 (~1.5 min): call-c.sh cut to what the budget left allows (~300 s): the new layout's GPU tests and
# its timing with the whole op (predictions in call-c.sh).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 60 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "sorted_layout" \
  2>&1 | grep -v Warn | tail -4
timeout 100 python benchmarks/exp_moe_prefill.py $OUT/w/layout --layout --names qwen3,mixtral \
  --tokens 512,4096,32768,131072 2>&1 | grep -v Warn | tail -10
