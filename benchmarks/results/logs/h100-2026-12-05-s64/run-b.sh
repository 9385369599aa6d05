# Session 64, call b: after call a, the sorted path's launch by the experts' mean run (BLOCK_M 128 from runs of 128) and
# the grouped path only to runs of GROUP (journal 461). Tests (test_moe, test_integrations); a gpt-oss-shaped and a
# Mixtral-shaped model (4 layers each) prefilling 64-4096 tokens, stock against patched; then the ops at 128 tokens (the
# grouped / sorted crossover) and 4096 (launches around call a's best), fp8 / int8 at both shipped ones; the registry's
# moe_experts_prefill rows (rooftop bench); a left-padded batch's prefill (exp_padded_prefill.py, journal 463:
# attention_varlen past the padding; predicted 1.2-2x less attention time than SDPA's masked backend, the patched model
# 5-15% faster than with prefill_attention=False at 8 x 2048). Predicted: tests pass; gpt-oss 2048 tokens patched faster
# than stock (42.6 against 37.4 ms in session 63: the eager loop's ~7 ms a layer against the sorted path's ~1.3);
# Mixtral within 5% of stock or faster at 2048+ (its grouped_mm 3.6 ms a layer against the sorted path's 3.5), 0-10%
# faster at 64-256 (the grouped path / sorted path against
# grouped_mm: 1.15 against 1.23 ms at 128 tokens); the experts are most of these models' prefill time.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w/models $OUT/w/ops
timeout 150 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py tests/test_integrations.py \
  > $OUT/w/tests.txt 2>&1; tail -6 $OUT/w/tests.txt
timeout 100 python benchmarks/exp_moe_prefill.py $OUT/w/models --models 2>&1 | grep -v Warn > $OUT/w/models.txt
timeout 50 python -m rooftop bench moe_experts_prefill --providers rooftop,eager,grouped_mm --out $OUT/w/results \
  2>&1 | grep -v Warn > $OUT/w/bench.txt
timeout 50 python benchmarks/exp_padded_prefill.py $OUT/w/padded 2>&1 | grep -v Warn > $OUT/w/padded.txt
timeout 80 python benchmarks/exp_moe_prefill.py $OUT/w/ops --ops --quant --tokens 128,4096 \
  2>&1 | grep -v Warn > $OUT/w/ops.txt
tar czf $OUT/call-b.tgz -C $OUT w
cat $OUT/w/models.txt $OUT/w/padded.txt; tail -12 $OUT/w/bench.txt; grep -v "eager loop" $OUT/w/ops.txt | tail -60
