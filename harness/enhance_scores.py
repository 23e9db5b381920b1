"""Standard speech-quality scores for the enhancement bench (bench/enhance-scores.ts), computed with the standard
implementations, never with Soundry's own code:

- PESQ wideband (ITU-T P.862.2) through `pesq` (the ITU reference C code wrapped for Python), mode 'wb', 16 kHz;
- STOI (Taal et al. 2011) through `pystoi` (extended=False), and ESTOI (Jensen & Taal 2016, extended=True);
- DNSMOS P.835 (SIG, BAK, OVRL) and P.808 through `speechmos`, which bundles Microsoft's DNSMOS ONNX models
  (sig_bak_ovr.onnx, model_v8.onnx) and their polynomial calibration from the DNS Challenge's dnsmos_local.py;
- SI-SDR (Le Roux et al. 2019: both signals made zero-mean, the reference scaled by the optimal gain), in numpy.

    harness/.venv/bin/python harness/enhance_scores.py items.json scores.json [--cache cache.json]

items.json is a JSON list of {"file": path, "reference"?: path, ...}; every other key is copied to the output. The
output is the same list with "scores" added: dnsmos_sig, dnsmos_bak, dnsmos_ovrl, dnsmos_p808 always; pesq_wb, stoi,
estoi, si_sdr when there is a reference (null, with "note", when a score cannot be computed). Where a scorer refuses
an input the note says why (PESQ raises on input it finds no utterance in).

Sample rates: every score here is defined at 16 kHz (PESQ's wideband mode takes 8 or 16 kHz, DNSMOS was trained at
16 kHz, pystoi resamples to 10 kHz itself from any rate). A file at another rate is resampled to 16 kHz with
scipy.signal.resample_poly (polyphase FIR, Kaiser window beta 5, the rate ratio reduced by the gcd) after averaging
its channels to mono, and the output says so in "resampled_from". The references of the corpus pairs are 16 kHz mono.

Cache: with --cache, scores are kept by the sha256 of the file's bytes and of its reference's, SCORER_VERSION and the
scorers' package versions, so a rerun scores only outputs that changed; the same bytes give the same scores.

Lengths: an enhanced file and its reference are compared over their common length when they differ by at most
LENGTH_SLACK_S (codec padding, a stage's tail); a larger difference means the chain cut audio (long_silences,
fillers), so the intrusive scores would compare unaligned speech: they are left null with a note, DNSMOS still runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import warnings
from math import gcd

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

RATE = 16000
LENGTH_SLACK_S = 0.05


def load_16k_mono(path: str) -> tuple[np.ndarray, int]:
    data, rate = sf.read(path, dtype="float64", always_2d=True)
    x = data.mean(axis=1)
    if rate != RATE:
        g = gcd(rate, RATE)
        x = resample_poly(x, RATE // g, rate // g)
    return x, rate


def si_sdr(est: np.ndarray, ref: np.ndarray) -> float:
    est = est - est.mean()
    ref = ref - ref.mean()
    a = float(np.dot(est, ref) / max(np.dot(ref, ref), 1e-20))
    target = a * ref
    noise = est - target
    return 10 * math.log10(max(float(np.dot(target, target)), 1e-20) / max(float(np.dot(noise, noise)), 1e-20))


_DNSMOS = None


def dnsmos(x: np.ndarray) -> dict[str, float]:
    """speechmos' DNSMOS (its models, features and calibration, called as speechmos.dnsmos.run calls it), with ONNX
    Runtime's idle threads told not to spin: on a shared machine spinning burns the cores other work waits for."""
    global _DNSMOS
    import onnxruntime as ort
    from speechmos import dnsmos as dm

    if _DNSMOS is None:
        models = os.path.join(os.path.dirname(os.path.abspath(dm.__file__)), "dnsmos_models")

        class Dnsmos(dm.DNSMOS):
            def __init__(self) -> None:  # noqa: D107 - the parent's, with session options
                so = ort.SessionOptions()
                so.add_session_config_entry("session.intra_op.allow_spinning", "0")
                self.primary_model_path = os.path.join(models, "sig_bak_ovr.onnx")
                self.onnx_sess = ort.InferenceSession(self.primary_model_path, so)
                self.p808_onnx_sess = ort.InferenceSession(os.path.join(models, "model_v8.onnx"), so)

        _DNSMOS = Dnsmos()
    # The DNSMOS models take float audio in [-1, 1] (speechmos refuses anything outside); a decoded WAV already is.
    r = _DNSMOS(np.clip(x, -1.0, 1.0).astype(np.float32), RATE, False)
    return {"dnsmos_sig": float(r["sig_mos"]), "dnsmos_bak": float(r["bak_mos"]), "dnsmos_ovrl": float(r["ovrl_mos"]), "dnsmos_p808": float(r["p808_mos"])}


def intrusive(deg: np.ndarray, ref: np.ndarray) -> tuple[dict[str, float | None], list[str]]:
    from pesq import pesq
    from pystoi import stoi

    notes: list[str] = []
    scores: dict[str, float | None] = {"pesq_wb": None, "stoi": None, "estoi": None, "si_sdr": None}
    if abs(len(deg) - len(ref)) > LENGTH_SLACK_S * RATE:
        notes.append(f"length {len(deg) / RATE:.2f} s against the reference's {len(ref) / RATE:.2f} s: audio was cut, intrusive scores not comparable")
        return scores, notes
    n = min(len(deg), len(ref))
    deg, ref = deg[:n], ref[:n]
    try:
        scores["pesq_wb"] = float(pesq(RATE, ref, deg, "wb"))
    except Exception as err:  # pesq raises NoUtterancesError / InvalidSampleRateError with a message worth keeping
        notes.append(f"pesq: {type(err).__name__}: {err}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pystoi warns when fewer than 30 frames remain; the value is then 1e-5
        scores["stoi"] = float(stoi(ref, deg, RATE, extended=False))
        scores["estoi"] = float(stoi(ref, deg, RATE, extended=True))
    scores["si_sdr"] = si_sdr(deg, ref)
    return scores, notes


def score_item(item: dict) -> dict:
    out = dict(item)
    x, rate = load_16k_mono(item["file"])
    scores: dict[str, float | None] = dict(dnsmos(x))
    notes: list[str] = []
    if rate != RATE:
        out["resampled_from"] = rate
    if item.get("reference"):
        ref, ref_rate = load_16k_mono(item["reference"])
        if ref_rate != RATE:
            out["reference_resampled_from"] = ref_rate
        s, notes = intrusive(x, ref)
        scores.update(s)
    out["scores"] = scores
    if notes:
        out["note"] = "; ".join(notes)
    return out


def digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# Bumped whenever what a score means changes here; with the scorers' versions it keys the cache.
SCORER_VERSION = "1"


def versions() -> str:
    from importlib.metadata import version

    return ",".join(f"{p}={version(p)}" for p in ("pesq", "pystoi", "speechmos", "onnxruntime", "scipy"))


def cache_key(item: dict) -> str:
    return ":".join([SCORER_VERSION, versions(), digest(item["file"]), digest(item["reference"]) if item.get("reference") else "-"])


def save_cache(path: str, cache: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(cache, f)
    os.replace(path + ".tmp", path)


def main(argv: list[str]) -> int:
    args = argv[1:]
    cache_path = None
    if "--cache" in args:
        i = args.index("--cache")
        cache_path = args[i + 1]
        del args[i : i + 2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        items = json.load(f)
    cache: dict[str, dict] = {}
    if cache_path and os.path.exists(cache_path):
        with open(cache_path, encoding="utf-8") as f:
            cache = json.load(f)
    results = []
    reused = 0
    for i, item in enumerate(items):
        key = cache_key(item)
        if key in cache:
            reused += 1
            results.append({**item, **cache[key]})
        else:
            scored = score_item(item)
            cache[key] = {k: v for k, v in scored.items() if k in ("scores", "note", "resampled_from", "reference_resampled_from")}
            results.append(scored)
        if (i + 1) % 25 == 0:
            print(f"scored {i + 1}/{len(items)} ({reused} from the cache)", file=sys.stderr)
            # Kept as it goes, so an interrupted run's work is not lost to the next one.
            if cache_path:
                save_cache(cache_path, cache)
    with open(args[1], "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    if cache_path:
        save_cache(cache_path, cache)
    print(f"scored {len(items)} files, {reused} from the cache", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
