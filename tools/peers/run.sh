#!/usr/bin/env bash
# Rebuild tools/peers/peers.csv: make the peers' own virtual environment (tools/peers/.venv,
# git-ignored) from requirements.txt if it is missing, then run run.py in it. Not part of
# `make test`; the book reads the committed peers.csv. Usage: bash tools/peers/run.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ ! -x "$here/.venv/bin/python" ]; then
    python3 -m venv "$here/.venv"
    "$here/.venv/bin/pip" install --quiet -r "$here/requirements.txt"
fi
"$here/.venv/bin/python" "$here/run.py"
