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
# Property tests run their whole example counts here (tests/tiers.py); a plain `pytest` runs a twentieth.
export COMPUTEROPS_TESTS=full
# Two workers (pytest-xdist): the browser tiers wait on round trips as much as they compute, so two at once use the
# machine's second core; a module stays on one worker (tests/conftest.py). COMPUTEROPS_TEST_WORKERS=0 runs serially.
echo "[test] pytest"; exec .venv/bin/pytest -q --durations=15 -n "${COMPUTEROPS_TEST_WORKERS:-2}" --dist loadgroup "${tier[@]}" "$@"
