# Prepared in session 53 (no machine lent), for the next session: the matmul results file's matmul_residual and
# matmul_bias_silu rows with the alternating harness (its residual rows predate NOTES item 353's RESIDUAL_LEAD; the
# bias + SiLU ones predate the merge of epilogue-activate), tuned from an empty cache: a call of its own. The session
# writes the family's file after each case (item 351), so a cut run keeps what it measured.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 560 python benchmarks/gpu_session.py $OUT/w/session --families matmul --ops matmul_residual,matmul_bias_silu \
  --providers rooftop,eager,cublas --no-ncu 2>&1 | grep -v Warn > $OUT/w/session-matmul.log
tail -30 $OUT/w/session-matmul.log
tar czf $OUT/call-c.tgz -C $OUT w
