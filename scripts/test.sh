#!/usr/bin/env bash
# Set up everything (PostgreSQL's binaries included, for the run index's postgres tier), then run lint, types and all
# the test tiers (pure, in-process, browser, postgres).
# `--slow` adds the slow tier (the whole-catalog mutation audit, tens of minutes); other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
if [[ "${1:-}" == "--slow" ]]; then
  shift
  tier=(-m "slow or not slow")
fi
bash scripts/setup.sh --postgres
echo "[test] ruff"; .venv/bin/ruff check .
echo "[test] mypy"; .venv/bin/mypy
# Property tests run their whole example counts here (tests/tiers.py); a plain `pytest` runs a twentieth.
export COMPUTEROPS_TESTS=full
# Serial by default: on the 2-core reference machine two pytest-xdist workers were no faster (the browser tiers are
# CPU-bound there) and one control test hung under them. COMPUTEROPS_TEST_WORKERS=N runs N workers (a module stays on
# one worker, tests marked `spread` go where there is room: tests/conftest.py) on a machine with more cores.
echo "[test] pytest"; exec .venv/bin/pytest -q --durations=15 -n "${COMPUTEROPS_TEST_WORKERS:-0}" --dist loadgroup "${tier[@]}" "$@"
