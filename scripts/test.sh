#!/usr/bin/env bash
# Set up everything (PostgreSQL's binaries included, for the run index's postgres tier; llama-cpp-python's server and
# a real instruct model, for the real_model tier), then run lint, types and all the test tiers (pure, in-process,
# browser, postgres, real_model).
# `--slow` adds the slow tier (the whole-catalog mutation audit, tens of minutes); other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
if [[ "${1:-}" == "--slow" ]]; then
  shift
  tier=(-m "slow or not slow")
  export COMPUTEROPS_EXAMPLES=whole  # property tests' whole example counts (tests/tiers.py)
fi
bash scripts/setup.sh --postgres --real-model
# This machine's environment sets PYTHONDONTWRITEBYTECODE=1: every process would compile the checkout's modules from
# source each time it starts (the CLI's subprocesses, Ray's workers: measured 0.5 to 0.8 s of a `report` or `verify`
# subprocess). The tests run with the bytecode kept (in __pycache__/, ignored by git).
unset PYTHONDONTWRITEBYTECODE
echo "[test] ruff"; .venv/bin/ruff check .
# mypy runs beside the tests and its verdict is printed after them; either failing fails the command. A clean clone
# has no mypy cache (about 45 s of one core), and the test workers leave a core idle part of the time (waiting on
# Chromium and on the CLI's child processes: the `CPU:` line at the end says how much), which mypy uses.
mypy_log=$(mktemp)
trap 'rm -f "$mypy_log"' EXIT
.venv/bin/mypy >"$mypy_log" 2>&1 &
mypy_pid=$!
# Property tests run half their example counts here, their whole counts with --slow (tests/tiers.py); a plain `pytest`
# runs a twentieth. A missing real model or llama-cpp-python fails the real_model tier here instead of skipping it.
export COMPUTEROPS_TESTS=full
# Two pytest-xdist workers by default (the reference machine's two cores): a browser test waits on Chromium's round
# trips as much as it computes, so a second module beside it uses the idle time (measured: four browser modules, 181 s
# serial, 140 s on two workers). A module's tests go to one worker (`--dist loadfile`), so its module fixtures are
# built once: the groups tests/conftest.py marks (`--dist loadgroup`) do not reach the node ids with pytest 9.2 and
# pytest-xdist 3.8 (xdist sets `item._nodeid`, which pytest 9 no longer reads). Modules are handed out slowest first
# (tests/module_seconds.json; `--no-loadscope-reorder` keeps that order instead of xdist's most-tests-first), so no
# long module starts last on one worker while the other idles. COMPUTEROPS_TEST_WORKERS=0 runs serially, N on a
# larger machine.
echo "[test] pytest (mypy beside it)"
pytest_status=0
.venv/bin/pytest -q --durations=15 -n "${COMPUTEROPS_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder \
  "${tier[@]}" "$@" || pytest_status=$?
mypy_status=0
wait "$mypy_pid" || mypy_status=$?
echo "[test] mypy"; cat "$mypy_log"
if [ "$mypy_status" -ne 0 ]; then echo "[test] mypy failed (exit $mypy_status)"; fi
if [ "$pytest_status" -ne 0 ]; then echo "[test] pytest failed (exit $pytest_status)"; exit "$pytest_status"; fi
exit "$mypy_status"
