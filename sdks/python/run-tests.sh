#!/usr/bin/env bash
# The Python SDK's checks: mypy (strict) and the unittest suite against a real Workroom server started from
# server/dist/main.js (built first if missing). With DATABASE_URL set, the servers run on PostgreSQL, each in
# a schema of its own. Needs node, python3 >= 3.9; the install test needs Debian's python3-venv and
# python3-wheel-whl (apt-get install -y python3-venv python3-wheel-whl mypy).
# Prints unittest's summary and a last line "python-sdk: N passed, N failed"; exits non-zero on failure.
# `run-tests.sh --server-only`: only the tests that talk to a server (for a run on a second database).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
PY="${PYTHON:-python3}"

if [ -z "${WORKROOM_TEST_SERVER_MAIN:-}" ] && [ ! -f "$repo/server/dist/main.js" ]; then
  (cd "$repo" && npm run --silent build) || { echo "python-sdk: 0 passed, 1 failed"; exit 1; }
fi

status=0
# --server-only: the unittest tests that talk to a server and nothing else (no mypy, no generated-types
# check): a second run of the suite on another database (CI runs it so on PostgreSQL).
if [ "${1:-}" = "--server-only" ]; then
  echo "== unittest, the tests that talk to a server (DATABASE_URL=${DATABASE_URL:-SQLite})"
  (cd "$here" && "$PY" tests/run.py "$@") || status=1
  exit $status
fi
if command -v mypy >/dev/null 2>&1; then
  echo "== mypy --strict (Python 3.9 rules)"
  (cd "$here" && mypy workroom tests) || status=1
else
  echo "mypy is not installed (apt-get install -y mypy): type check not run" >&2
  status=1
fi

echo "== generated event types (workroom/events.py) match docs/api/openapi.json"
"$PY" "$here/scripts/generate_types.py" --check || status=1

echo "== unittest"
(cd "$here" && "$PY" tests/run.py "$@") || status=1
exit $status
