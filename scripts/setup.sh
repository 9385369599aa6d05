#!/usr/bin/env bash
# Creates .venv with the pins seen to work on CPU machines (Triton interpreter) and rooftop in it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -r requirements-cpu.txt
.venv/bin/python -m pip install -q --no-deps -e .
