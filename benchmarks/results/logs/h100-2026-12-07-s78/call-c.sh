# Session 78's cut second call (~2.5 min; budget low after eight refusals): call-b's probe and window tests only.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
W=/tmp/g; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/g.tgz -C /tmp g; }
timeout 50 python benchmarks/results/logs/h100-2026-12-07-s78/probe_s78.py 2>&1 | grep -v Warn | tee $W/probe.txt; pack
timeout 70 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_attention.py tests/test_integrations.py \
  -k "window or sink or packed or single or gpt_oss" > $W/tests.txt 2>&1; tail -1 $W/tests.txt
grep FAILED $W/tests.txt | head; pack
