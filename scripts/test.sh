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
# Two workers (one per core on the 2-core reference machine); a test file stays on one worker,
# so its module fixtures (a PostgreSQL server, a Prometheus stack) start once.
export PERFSLEUTH_NO_SKIPS=1  # everything is installed above: a skipped test is a failure
exec .venv/bin/python -m pytest -n "${PERFSLEUTH_TEST_WORKERS:-2}" --dist loadfile "$@"
