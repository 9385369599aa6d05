# Session 59, call d: the split path as wired from the sweep (split-launch-sweep.txt: quant_split_chunk, 16 KB of
# input a program on 4 warps, at most 32 chunks a row; quantize_rows split past 65536 only): the GPU tests of the
# quantized activations, then the results rows of swiglu_packed_fp8 and quantize_rows_fp8 beside eager and
# torch.compile. Predicted (% of copy at 32768 / 65536 / 131072 / 262144): swiglu 89.8 / 87.5 / 83.8 / 80.6,
# quantize_rows 95 / 83 / 75 / 73.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=line -n 8 tests/test_activations.py tests/test_fallbacks.py \
  tests/test_compile.py tests/test_plans.py -k "quant or fp8 or swiglu or gpu_sizes or split" 2>&1 | grep -v Warn \
  | tail -8
timeout 200 python benchmarks/gpu_session.py $OUT/w/session --families activations \
  --ops swiglu_packed_fp8,quantize_rows_fp8 --providers rooftop,eager,compile --no-ncu 2>&1 | grep -v Warn | tail -24
tar czf $OUT/call-d.tgz -C $OUT w
