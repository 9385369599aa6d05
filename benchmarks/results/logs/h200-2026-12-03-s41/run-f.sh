# session 41, call f: the matmul results rows at M = 512 twice more (same code as call e), to see how far cuBLAS's
# and our ratios move between runs (call d / e: 512 x 6144 x 4096 1.07x / 0.98x, 512 x 10240 x 8192 0.93x / 0.90x).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/s1 $W/s2
pack() { tar czf $OUT/run-f.tgz -C $OUT w; }
for s in s1 s2; do
    timeout 200 python benchmarks/gpu_session.py $W/$s --families matmul --ops matmul --no-ncu --leading 512 \
        > $W/$s/log.txt 2>&1
    echo "$s rc $?"; grep -E "^matmul" $W/$s/log.txt | cut -c1-150; pack
done
