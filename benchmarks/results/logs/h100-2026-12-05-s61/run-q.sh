# Session 61, call q (~4 min): why the patched Mixtral-shaped model strayed from stock in call o (last logits rel err
# 0.57 at batch 1, 0.22 at batch 8; the interpreter's small model: 3.5e-3). exp_moe_agreement.py, 2 layers of
# Llama-3-8B's shapes, bf16 and fp32, Mixtral and Llama: patch_model variants against stock on a prefill and a decode
# step, per layer, with the routers' choices. And the failing sweep test's traceback. Predicted: fp32 ~1e-6 (the
# kernels agree); bf16 Llama ~1e-2; the Mixtral bf16 error comes in at the layer where routing first differs.
# Last, the moe family's rows with the launch wired from call n ((8, 256, 2), 4 an SM): predicted 85-92% at one token
# of Mixtral's experts (call n's rows: 69%).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 60 python -m pytest -q -p no:logging --tb=long tests/test_moe.py -k cannot_be_graphed 2>&1 | grep -v Warn \
  | tail -40 > $OUT/w/sweep-test.txt; tail -25 $OUT/w/sweep-test.txt
timeout 300 python benchmarks/exp_moe_agreement.py $OUT/w --layers 2 2>&1 | grep -v Warn | tee $OUT/w/agreement.txt \
  | grep -v "^ \|Warning\|deprecated"
python - <<'PY'
import json, os
r = json.load(open(os.environ["OUT"] + "/w/exp-moe-agreement.json"))
for k, v in r.items():
    if isinstance(v, dict) and "prefill_logits" in v:
        print(k, {a: (round(b, 4) if isinstance(b, float) else b) for a, b in v.items() if a != "counts"})
PY
timeout 100 python benchmarks/gpu_session.py $OUT/w/session --families moe --no-ncu 2>&1 | grep -v Warn | tail -11
tar czf $OUT/call-q.tgz -C $OUT w
