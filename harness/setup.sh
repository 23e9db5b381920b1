#!/usr/bin/env bash
# Creates or updates the reference harness's virtual environment in harness/.venv (git-ignored) from the pinned
# requirements. Idempotent:
# - a venv whose stamp matches requirements*.txt is left alone (the usual case: returns at once);
# - after a requirements change the pins are installed into the existing venv (pip moves each package to its pinned
#   version), not into a new one: several people share one checkout's venv, and deleting it under a running case
#   breaks their run for the minutes a rebuild takes. A package dropped from the requirements stays installed until
#   `rm -rf harness/.venv`, after which this makes a fresh one;
# - the stamp is written only after both installs succeed, so an interrupted run is redone by the next.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
stamp="$venv/.requirements.sha256"
want="$(cat "$here/requirements.txt" "$here/requirements-nodeps.txt" | sha256sum | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then exit 0; fi
if [[ ! -x "$venv/bin/python" ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
fi
rm -f "$stamp"
"$venv/bin/pip" install --quiet -r "$here/requirements.txt"
"$venv/bin/pip" install --quiet --no-deps -r "$here/requirements-nodeps.txt"
echo "$want" > "$stamp.tmp"
mv "$stamp.tmp" "$stamp"
