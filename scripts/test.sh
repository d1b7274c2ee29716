#!/usr/bin/env bash
# Set up everything, then run lint, types and all three test tiers (pure, in-process, browser).
# `--slow` adds the slow tier (the whole-catalog mutation audit, tens of minutes); other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
if [[ "${1:-}" == "--slow" ]]; then
  shift
  tier=(-m "slow or not slow")
fi
bash scripts/setup.sh
echo "[test] ruff"; .venv/bin/ruff check .
echo "[test] mypy"; .venv/bin/mypy
echo "[test] pytest"; exec .venv/bin/pytest -q --durations=15 "${tier[@]}" "$@"
