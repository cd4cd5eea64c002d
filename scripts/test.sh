#!/usr/bin/env bash
# The whole test suite on a fresh Linux machine: system packages, the venv, lint, types, pytest.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k store`).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-system-deps.sh
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q -e '.[dev]'

.venv/bin/ruff check src tests scripts benchmarks
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
