#!/usr/bin/env bash
# One entry point for the README's commands; sets up a virtual environment on first use.
#   scripts/dev.sh demo            run the demo
#   scripts/dev.sh test [args]     lint (ruff) and run the test suite (pytest args pass through)
# HEADRACE_VENV picks the environment's folder (default .venv); CI points it at a fresh one.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${HEADRACE_VENV:-.venv}"
what="${1:-}"
[ $# -gt 0 ] && shift
case "$what" in
  demo) extras="demo" ;;
  test) extras="test" ;;
  *) echo "usage: scripts/dev.sh demo|test [pytest args]" >&2; exit 2 ;;
esac
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[$extras]"
if [ "$what" = demo ]; then
  exec "$venv/bin/python" -m headrace.demo "$@"
fi
"$venv/bin/python" -m ruff check --quiet headrace tests bench scripts || { echo "ruff found problems (see above)" >&2; exit 1; }
set +e
"$venv/bin/python" -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$status"
