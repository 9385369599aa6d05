# session 40, call f: softmax / log_softmax at 131072 and 262144 (issue 2: >= 2x torch.compile from 2048; 1.73x /
# 1.86x through the Gluon parts kernel) with the reload kernel stretched to 512 KB rows (RELOAD_MAX_BYTES; one program
# an SM for whole tiles: 132 rows of 256 KB in flight, 34 MB, inside L2 for pass 2), against the library, same run.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/lib $W/reload
pack() { tar czf $OUT/run-f.tgz -C $OUT w; }
timeout 110 python benchmarks/gpu_session.py $W/reload --families softmax --ops softmax,log_softmax \
    --widths 131072,262144 --no-ncu --set softmax.RELOAD_MAX_BYTES=524288 > $W/reload/log.txt 2>&1
echo "reload rc $?"; grep -E "^(log_)?softmax " $W/reload/log.txt | cut -c1-150; pack
timeout 90 python benchmarks/gpu_session.py $W/lib --families softmax --ops softmax,log_softmax \
    --widths 131072,262144 --no-ncu > $W/lib/log.txt 2>&1
echo "library rc $?"; grep -E "^(log_)?softmax " $W/lib/log.txt | cut -c1-150; pack
