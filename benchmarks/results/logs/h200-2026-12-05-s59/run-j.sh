# Prepared in session 59, after run-i.sh: the fp8 W8A8 model end to end with the split-K kernel at decode (session 59
# call c before it: 815.6 tok/s at batch 1, 6646 at batch 8, 54% of its floor; patched bf16 740.5 / 5722, int4 1282 /
# 7530). Predicted: batch 1 1000-1150 tok/s (~70% of the floor), batch 8 7000-8000.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 250 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --fp8 --no-int4 --repeats 2 2>&1 \
  | grep -v Warn | tail -8
timeout 200 python benchmarks/e2e_decode.py $OUT/w/b8 --graphs --cache-len 4096 --batch 8 --fp8 --no-int4 \
  --repeats 1 2>&1 | grep -v Warn | tail -8
tar czf $OUT/call-j.tgz -C $OUT w
