#!/usr/bin/env bash
# Set up, then run the end-to-end demo on the built-in defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/openprogram memory demo "$@"
