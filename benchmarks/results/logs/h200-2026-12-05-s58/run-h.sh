# Prepared in session 58 (no machine lent): the GPU check of this session's changes (journal items 384-386).
# 1. rms_norm(quant=...) on rows holding NaN / inf: every path (on-chip, Gluon whole and in parts) now gives a NaN
#    scale (predicted: passes; before the fix the GPU gave 1e-30 / QMAX). 2. rooftop.nn.RMSNorm(quant=), the fp8
#    MLP taking its rows from the norm, patch_model's new probes and Phi-3 / Cohere / Qwen3.5 / VaultGemma / GLM,
#    under CUDA (fp32 models). 3. benchmarks/check_architectures.py in bf16 on the GPU (predicted: every architecture
#    within ~1e-2 of stock, as the bf16 integration tests; decode_attention answering SDPA's decode steps).
# ~3-4 min.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python -m pytest -q -p no:logging --tb=line tests/test_rms_norm.py tests/test_activations.py \
  -k "holding_nan or quant" 2>&1 | grep -v Warn | tail -15 > $OUT/w/tests.txt
timeout 120 python -m pytest -q -p no:logging --tb=line tests/test_nn.py tests/test_integrations.py \
  2>&1 | grep -v Warn | tail -15 >> $OUT/w/tests.txt
cat $OUT/w/tests.txt
timeout 200 python benchmarks/check_architectures.py $OUT/w/arch-bf16 --dtype bfloat16 2>&1 | grep -v Warn | tail -40
tar czf $OUT/call-h.tgz -C $OUT w
