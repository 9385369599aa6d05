# Session 63, call c: the gpt-oss capture probe (call b: every gpt-oss model's graphed decode failed with "Cannot copy
# between CPU and CUDA tensors during CUDA graph capture"), then session 62's run-h.sh (the grouped MoE path on this
# card: exp_moe_grouped 1-64 tokens, --quant fp8, PDL A/B, the moe rows, the Mixtral-shaped model fp8 / int8).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 90 python benchmarks/results/logs/h100-2026-12-05-s63/probe_gpt_oss_capture.py 2>&1 | grep -v Warn | tail -40
timeout 200 python benchmarks/exp_moe_grouped.py $OUT/w --tokens 1,2,4,8,16,32,64 2>&1 | grep -v Warn \
  | tee $OUT/w/exp.txt | grep -v "n16k" | tail -40
timeout 80 python benchmarks/exp_moe_grouped.py $OUT/w --quant fp8 --tokens 1,2,4,8 2>&1 | grep -v Warn \
  | tee $OUT/w/exp-fp8.txt | tail -20
tar czf $OUT/call-c.tgz -C $OUT w
