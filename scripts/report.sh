#!/usr/bin/env bash
# The main job: the report. On a machine whose python3 sees a CUDA GPU (the GPU image brings its own
# torch and triton) `rooftop report` measures every registered family first (--quick: under 5 minutes
# on an H200), writing benchmarks/results, then renders; without one it renders the committed results
# and says so on the page. Either way: report/index.html (self-contained) and report/report.md.
# Extra arguments go to `rooftop report` (--quick, --render-only, --png, --out DIR, --results DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
if python3 -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    PYTHONPATH=src exec python3 -m rooftop report --results benchmarks/results --out report "$@"
fi
scripts/setup.sh
exec .venv/bin/rooftop report --results benchmarks/results --out report "$@"
