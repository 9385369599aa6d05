# Prepared in session 59, after run-i.sh: the fp8 W8A8 model end to end with the split-K kernel at decode (session 59
# call c before it: 815.6 tok/s at batch 1, 6646 at batch 8, 54% of its floor; patched bf16 740.5 / 5722, int4 1282 /
# 7530). Predicted: batch 1 1000-1150 tok/s (~70% of the floor), batch 8 7000-8000.
# The same run as this session's call c (its results are call-c.tgz).
bash benchmarks/results/logs/h200-2026-12-05-s59/run-c.sh
