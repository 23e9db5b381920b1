#!/usr/bin/env bash
# Creates the reference harness's virtual environment in harness/.venv (git-ignored) from the pinned requirements.
# Idempotent: a venv whose requirements have not changed since it was made is kept.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
stamp="$venv/.requirements.sha256"
want="$(cat "$here/requirements.txt" "$here/requirements-nodeps.txt" | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then exit 0; fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet -r "$here/requirements.txt"
"$venv/bin/pip" install --quiet --no-deps -r "$here/requirements-nodeps.txt"
echo "$want" > "$stamp"
