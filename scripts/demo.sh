#!/usr/bin/env bash
# Set up everything, then run the demo against the built-in SCRIPTED endpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/computerops demo "$@"
