# Prepared in session 62 for the next (~8 min; an H200 preferred, the anchors' card): moe_experts' grouped path
# (journal 434) where session 62 had only an H100. 1. exp_moe_grouped.py, 1-64 tokens (past MOE_MAX_TOKENS = 16:
# where transformers' grouped_mm overtakes, to set MOE_MAX_TOKENS); 2. the same with --quant fp8 at 1-8 tokens (wider
# k-tiles for codes on the grouped path); both with each path also without PDL (journal 439); 3. the moe family's rows; 4. the Mixtral-shaped model with --fp8 --int8,
# batch 1. Predicted (H200): Mixtral 8-16 tokens grouped 95-100% of the floor (66% a pair a program in session 61),
# grouped_mm ahead only from ~64 tokens; fp8 codes with (32, 256, 4) within 3% of a pair a program at 1 token; model
# bf16 patched 731 -> 750-780 tok/s, fp8 1064-1100, int8 1000-1080.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/exp_moe_grouped.py $OUT/w --tokens 1,2,4,8,16,32,64 2>&1 | grep -v Warn \
  | tee $OUT/w/exp.txt | grep -v "n16k" | tail -40
timeout 80 python benchmarks/exp_moe_grouped.py $OUT/w --quant fp8 --tokens 1,2,4,8 2>&1 | grep -v Warn \
  | tee $OUT/w/exp-fp8.txt | tail -20
timeout 100 python benchmarks/gpu_session.py $OUT/w/session --families moe --no-ncu 2>&1 | grep -v Warn | tail -8
timeout 200 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --moe --no-int4 --fp8 --int8 \
  --layers 4 --repeats 1 2>&1 | grep -v Warn | tail -9
tar czf $OUT/call-h.tgz -C $OUT w
