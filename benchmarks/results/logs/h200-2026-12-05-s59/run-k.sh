# Prepared in session 59, for after run-i.sh / run-j.sh: swap_row_stats' poll by volatile loads
# (_support.SWAP_POLL_BY_LOAD, journal item 405) against relaxed atomics (the default), on the Triton split paths:
# the quantizing epilogues past 16K (every waiting program polls all G words: G^2 atomics a row, item 397) and the
# norms' split kernels (add_rms_norm, add_layer_norm with a residual past 65536; add_rms_norm_fp8). One process and
# Triton cache per setting (a global constexpr). Predicted: quantize_rows_fp8 at 131072 / 262144 75 / 73 -> 80-88%,
# swiglu_packed_fp8 at 262144 81 -> 85+; the norms level or +1-3 (8-16 chunks a row). Wire it if no row loses.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
for flag in False True False True; do
  TRITON_CACHE_DIR=/tmp/triton-$flag timeout 100 python benchmarks/gpu_session.py $OUT/w/poll-$flag \
    --families activations,rms_norm,layer_norm \
    --ops swiglu_packed_fp8,quantize_rows_fp8,add_rms_norm,add_rms_norm_fp8,add_layer_norm --providers rooftop \
    --widths 65536,131072,262144 --no-ncu --set _support.SWAP_POLL_BY_LOAD=$flag 2>&1 | grep -E "^(set|swiglu|quant|add)" \
    | cut -c1-100
done
tar czf $OUT/call-k.tgz -C $OUT w
