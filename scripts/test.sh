#!/usr/bin/env bash
# The tests: on a machine without CUDA the kernels run in Triton's interpreter; on a GPU for real,
# with the slow sizes too. pytest's exit 5 (no test collected) fails like any other failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# one worker a core (the interpreter runs on one; ROOFTOP_TEST_WORKERS overrides: a GPU host wants fewer CUDA contexts),
# work stolen as workers free up; the slowest tests named: CI is timed
.venv/bin/python -m pytest -q -n "${ROOFTOP_TEST_WORKERS:-auto}" --dist worksteal --durations=25 "$@"
