#!/usr/bin/env bash
# The main job: the report. With a CUDA GPU it measures first (benchmarks/gpu_session.py, a few
# minutes on an H200); without one it renders the committed results and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    PYTHONPATH=src .venv/bin/python benchmarks/gpu_session.py benchmarks/results "$@"
fi
.venv/bin/rooftop report --results benchmarks/results --out report
