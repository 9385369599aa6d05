# session 37, call d (run by hand while the machine was warm): quant_matmul's host path at M = 1 / 16 with a profile
# of the replays at M = 1.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 120 python benchmarks/probe_quant_host.py $OUT --batches 1,16 --profile-batch 1 2>&1 | tail -40
