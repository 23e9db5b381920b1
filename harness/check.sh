#!/usr/bin/env bash
# The full-size comparison of Soundry with the reference code (docs/differential-tests.md, "Against the reference
# code"): creates the harness venv if needed, generates every case (or the named ones) at the real configurations into
# harness/out/ (git-ignored), then runs Soundry's comparison on them and prints max abs / relative error per output.
# Exits non-zero if any output is over rel 1e-4 or any case fails.
#
#   bash harness/check.sh            # every case in harness/cases/
#   bash harness/check.sh mdx        # only the named cases
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash harness/setup.sh
case_args=()
for c in "$@"; do case_args+=(--case "$c"); done
started=$SECONDS
nice -n 10 harness/.venv/bin/python harness/generate.py --size full "${case_args[@]}"
echo "generated in $((SECONDS - started)) s" >&2
node --import tsx scripts/reference-check.ts harness/out "$@"
