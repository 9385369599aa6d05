# Session 62, call a (~6 min): the first half of s61's run-u.sh. fp8 / int8 experts and gpt-oss's experts on the GPU
# (journal 427-431): 1. test_moe.py + test_integrations.py; 2. the moe family's rows (moe_experts, moe_experts_fp8,
# moe_experts_int8 against eager, torch.compile, grouped_mm); 3. exp_moe_launch.py --quant fp8 (launch sweep for the
# quantized kernels). Predicted (H200): moe_experts_fp8 at one token of Mixtral 75-88% of its floor (~1.7x
# moe_experts); int8 within 5% of fp8's time. On an H100 the same as ratios.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py tests/test_integrations.py 2>&1 \
  | grep -v Warn | tail -15
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families moe --no-ncu 2>&1 | grep -v Warn | tail -20
timeout 200 python benchmarks/exp_moe_launch.py $OUT/w --quant fp8 2>&1 | grep -v Warn | tail -30
tar czf $OUT/call-a.tgz -C $OUT w
