# Session 80, call a: on an H200 session 79's pending call (the MoE rows, the Mixtral-shaped model, fp8_linear at
# decode M, the prefill A/B); on any other card the GEMV's FIT experiment (benchmarks/exp_gemv_fit.py, ~3 min).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
case $GPU in *H200*) exec bash benchmarks/results/logs/h100-2026-12-07-s79/call-h200.sh;; esac
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/a; mkdir -p $W; echo $GPU > $W/gpu.txt
timeout 420 python benchmarks/exp_gemv_fit.py $W 2>&1 | grep -v Warn > $W/exp-gemv-fit.log; tail -40 $W/exp-gemv-fit.log
tar czf $OUT/a.tgz -C /tmp a
