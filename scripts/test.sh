#!/usr/bin/env bash
# The tests: on a machine without CUDA the kernels run in Triton's interpreter; on a GPU for real,
# with the slow sizes too. pytest's exit 5 (no test collected) fails like any other failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/python -m pytest -q --durations=25 "$@"  # (the slowest tests named: CI's time is watched)
