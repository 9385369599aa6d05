#!/usr/bin/env bash
# The test suite on the GPU machine, file by file under a time budget (GPU time is scarce):
# per-file logs under $OUT/tests/, a summary line per file.
# Usage: [FILES="tests/test_a.py ..."] benchmarks/gpu_tests.sh [pytest -m expr] [budget s]
export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH}
marker=${1:-not slow}
budget=${2:-300}
mkdir -p "$OUT/tests"
start=$SECONDS
for f in ${FILES:-tests/test_*.py}; do
    left=$((budget - (SECONDS - start)))
    if [ "$left" -le 5 ]; then echo "$f: not run (budget spent)"; continue; fi
    name=$(basename "$f" .py)
    timeout "$left" python -m pytest "$f" -q -m "$marker" -p no:cacheprovider --maxfail=10 -rf > "$OUT/tests/$name.txt" 2>&1
    echo "$f [rc $?, $((SECONDS - start)) s]: $(tail -1 "$OUT/tests/$name.txt")"
    grep "^FAILED" "$OUT/tests/$name.txt" | cut -c1-220 | head -8
done
