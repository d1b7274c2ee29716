#!/usr/bin/env bash
# Set up everything, then run lint, types and all three test tiers (pure, in-process, browser).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "[test] ruff"; .venv/bin/ruff check .
echo "[test] mypy"; .venv/bin/mypy
echo "[test] pytest"; exec .venv/bin/pytest -q --durations=15 "$@"
