# Session 66, call b. Call a (H100): int4 experts at one token of Mixtral's 124.3 us at the shipped (8, 256, 2) with 4
# down programs an SM (s65: 191), 101.6 at (8, 1024, 4), 103.2 at (8, 512, 2) (two chunks a thread); at 4 tokens the
# shipped one best (347.6 against 386). The down kernel at 4 programs an SM has ~8 resident (64 registers allow 32):
# little in flight. 1. Launches again with down's programs an SM 4 / 8 / 16 / 32 and gate / up's and down's k-tiles
# apart: predicted 16 an SM 10-20% faster at one token (~90 us), no change at 4 tokens. 2. gpt-oss-shaped model at 256
# tokens with torch.profiler (call a: patched 8.10 ms against stock 7.53 after item 470; 64 / 2048 tokens faster):
# where the patched model's time goes. 3. int4 on the grouped path (never taken since s65: 2.1x int8's at 4-8 tokens of
# Mixtral's) against a pair a program at 4 / 8 / 16 tokens, now that its tile ORs the codes into a register magic (one
# LOP3 a code): predicted grouped still behind at 4 tokens, ahead at 8 of Mixtral's (pairs sharing experts).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python benchmarks/exp_moe_launch.py $OUT/w/launch --quant int4 --per-sm 4,8,16,32 \
  --launches 8x256x2,8x512x2,8x1024x4,8x512x2/8x256x2,8x1024x4/8x256x2 2>&1 | grep -v Warn > $OUT/w/launch.txt
timeout 80 python benchmarks/exp_moe_prefill.py $OUT/w/gptoss --models --names gpt-oss --prompts 256 --profile \
  2>&1 | grep -v "Warn\|RoPE scaling" > $OUT/w/gptoss.txt
timeout 70 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --tokens 4,8,16 --quick 2>&1 \
  | grep -v Warn > $OUT/w/grouped.txt
tar czf $OUT/call-b.tgz -C $OUT w
grep "rooftop" $OUT/w/launch.txt; cat $OUT/w/grouped.txt; cat $OUT/w/gptoss.txt | tail -40
