# Session 79's call h (~2.5 min; one tarball $OUT/h.tgz): packed tiles in one loop with 32-key tiles (the tuner is not
# offered them) against the tuned one-head tile, after item 551: a 32-query tile of 2 or 4 heads spans 160 keys, 5
# tiles of 32 of which 3 are whole (the one-head 64 x 64 tile: 192 keys, 1 of 3 whole), ~22% fewer instructions a
# row offline (128 x 32 of 4 heads, 4 warps, 170 registers: 3 programs an SM), or 98-101 registers (64 x 32 of 2 heads,
# 128 x 32 of 4 heads on 8 warps: 5 an SM as the one-head tile's 92). SASS check clean for all.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/h; mkdir -p $W; echo $GPU > $W/gpu.txt
C='[{"block_m":64,"block_n":64,"num_warps":4,"num_stages":2,"maxnreg":96,"single_loop":true}'
for s in 2 3; do for t in '"block_m":128,"block_n":32,"num_warps":4' '"block_m":128,"block_n":32,"num_warps":8' \
    '"block_m":64,"block_n":32,"num_warps":4'; do
  h=$(case $t in *64,*) echo 2;; *) echo 4;; esac); C="$C,{$t,\"num_stages\":$s,\"heads\":$h,\"single_loop\":true}"; done; done
C="$C]"; echo "$C"
timeout 200 python benchmarks/exp_attention_window.py $W --seqs 4096,16384 --configs "$C" 2>&1 | grep -v Warn > $W/exp.txt
tail -4 $W/exp.txt; tar czf $OUT/h.tgz -C /tmp h
