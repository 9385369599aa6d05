# Session 59, call a: the quantizing epilogues' split path for wide rows (_gated_quant_split_kernel: chunks of 8192
# over adjacent programs exchanging their max |y|, no second read; journal item 395). GPU tests of the quantized
# activations, then the rows of swiglu_packed_fp8 and quantize_rows_fp8 at every width beside eager and
# torch.compile, and at 32768-262144 again with the split path off (QUANT_SPLIT_MIN_N huge: the looped kernel).
# Predicted: split rows 88-95% of copy at 32768-262144 (the norms' split kernels: 84-91%), where the looped kernel
# read 94 / 69 / 55-61% (H100, item 394); one-tile rows (<= 16384) unchanged at 97-99.6%.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=line -n 8 tests/test_activations.py tests/test_fallbacks.py \
  -k "quant or fp8 or swiglu or gpu_sizes or split" 2>&1 | grep -v Warn | tail -8
timeout 200 python benchmarks/gpu_session.py $OUT/w/session --families activations \
  --ops swiglu_packed_fp8,quantize_rows_fp8 --providers rooftop,eager,compile --no-ncu 2>&1 | grep -v Warn | tail -24
timeout 100 python benchmarks/gpu_session.py $OUT/w/looped --families activations \
  --ops swiglu_packed_fp8,quantize_rows_fp8 --providers rooftop --widths 32768,65536,131072,262144 --no-ncu \
  --set activations.QUANT_SPLIT_MIN_N=1000000000 2>&1 | grep -v Warn | tail -12
tar czf $OUT/call-a.tgz -C $OUT w
