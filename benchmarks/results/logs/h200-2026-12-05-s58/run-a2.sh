# Session 58: s54's run-a2.sh (the rest of the GPU suite: row ops, decode attention, RoPE, the harness, the report,
# the integrations; sessions 53-58's tests among them, e.g. rms_norm(quant=)'s NaN rows, the fp8 norm -> MLP handoff,
# patch_model's probes) then benchmarks/check_architectures.py in bf16 (predicted: every architecture within ~1e-2).
bash benchmarks/results/logs/h200-2026-12-04-s54/run-a2.sh
set -x
timeout 200 python benchmarks/check_architectures.py $OUT/w/arch-bf16 --dtype bfloat16 2>&1 | grep -v Warn \
  | grep -v "^\[transformers\]" | tail -42
tar czf $OUT/call-a2.tgz -C $OUT w
