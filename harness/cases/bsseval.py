"""BSS Eval v4 as museval computes it for MUSDB18: the judge of Soundry's separation-quality bench.

museval's ``eval_mus_track`` scores a track by calling ``museval.evaluate(references, estimates, win=1 s, hop=1 s,
mode='v4')``: estimates padded or cut to the references' length, then ``metrics.bss_eval`` with
``compute_permutation=False``, 512-tap distortion filters computed once on the whole signals (time-invariant, v4) and
``bsseval_sources_version=False`` (the images variant SiSEC uses); every window in which any reference or estimate is
silent (its channel sum all zero) is NaN for every source. The per-track figure is the median over windows, NaN and
infinite windows skipped (``TrackStore``: infinite values are stored as NaN, ``np.nanmedian``).

This case runs that code itself on seeded reference/estimate pairs with realistic errors (gain, FIR filtering, delay,
leakage of the other sources, added noise, a time-varying gain) and writes museval's per-window SDR, ISR, SIR and SAR
and the per-source medians. Scenarios:

- ``musdb_pair``: ``museval.evaluate`` as eval_mus_track calls it on a vocals/accompaniment pair, 44.1 kHz stereo,
  1 s windows; the estimates are shorter than the references (padded by museval).
- ``four_stems``: ``museval.evaluate`` on four stereo sources, 1 s windows at 4 kHz (small enough to commit; the
  window is a sample count to the metric); one reference is silent for a whole window and one estimate for another
  (both windows NaN for every source); the estimates are longer than the references (cut by museval).
- ``filters_64``: ``metrics.bss_eval`` with 64-tap filters and overlapping windows (8000 samples, hop 6000), three
  stereo sources, one of them in antiphase (left = -right) for a window, which museval's channel-sum test takes
  for silence.
- errors: a wholly silent estimate and a wholly silent reference, which museval refuses (the messages are kept).

Audio is stored as int16 (value / 32768), as 16-bit stem files hold it, so the small case fits in under 3 MB; museval
is given the same values as float64.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil

import numpy as np
import scipy.signal
from safetensors.numpy import save_file

from common import mixture, write_case

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _import_museval():
    """museval's package imports musdb, whose stempeg needs ffmpeg and ffprobe on PATH when imported (only to decode
    MUSDB's stem files, which is not used here): the npm-installed binaries the project already has are put on
    PATH when the system has none."""
    if not (shutil.which('ffmpeg') and shutil.which('ffprobe')):
        dirs = [ROOT / 'node_modules' / '@ffmpeg-installer' / 'linux-x64', ROOT / 'node_modules' / '@ffprobe-installer' / 'linux-x64']
        missing = [str(d) for d in dirs if not d.is_dir()]
        if missing:
            raise SystemExit(f'museval needs ffmpeg/ffprobe on PATH (musdb imports stempeg): none found, nor {missing}; run npm ci')
        os.environ['PATH'] = os.pathsep.join([*(str(d) for d in dirs), os.environ.get('PATH', '')])
    import museval
    import museval.metrics
    return museval


def _q16(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(x * 32768.0), -32768, 32767).astype(np.int16)


def _sources(n: int, seconds: float, rate: int, seed: int) -> np.ndarray:
    """n music-like stereo sources [n, samples, 2] at different levels, quantised to 16 bits."""
    out = []
    for j in range(n):
        s = mixture(seconds, rate, seed + 101 * j).T.astype(np.float64)  # [samples, 2], peak 0.5
        out.append(s * (0.35 + 0.15 * j))
    return np.stack(out)


def _distort(refs: np.ndarray, rng: np.random.Generator, rate: int) -> np.ndarray:
    """Estimates with the errors real separators make: each is its reference scaled, filtered and delayed, plus some
    of every other source, white noise and (for one source) a slowly varying gain."""
    nsrc, n, nchan = refs.shape
    est = np.zeros_like(refs)
    for j in range(nsrc):
        gain = rng.uniform(0.8, 1.1)
        taps = scipy.signal.firwin(31, rng.uniform(0.6, 0.95)) if j % 2 == 0 else np.array([1.0, -0.2 * rng.uniform()])
        # One source 40 samples late (well inside the 512-tap filters), the others on time.
        delay = 40 if j == 1 else 0
        # Zero phase (forward and backward), as a mask's smoothing is: the only delay is the one chosen below.
        own = scipy.signal.filtfilt(taps, [1.0], refs[j], axis=0) * gain
        own = np.concatenate([np.zeros((delay, nchan)), own[: n - delay]])
        leak = sum(rng.uniform(0.01, 0.2) * refs[k] for k in range(nsrc) if k != j)
        noise = rng.standard_normal((n, nchan)) * 10 ** (rng.uniform(-40, -25) / 20) * np.std(refs[j])
        e = own + leak + noise
        if j == nsrc - 1:
            t = np.arange(n) / rate
            e *= (1.0 + 0.4 * np.sin(2 * np.pi * 0.7 * t))[:, None]
        est[j] = e
    return est


def _zero(x: np.ndarray, j: int, a: int, b: int) -> None:
    x[j, a:b, :] = 0


def _scenarios(size: str) -> list[dict]:
    full = size == 'full'
    rng = np.random.default_rng(27)
    out = []

    # The MUSDB vocals/accompaniment evaluation: 44.1 kHz, 1 s windows; estimates shorter than the references.
    rate = 44100
    refs = _sources(2, 12.0 if full else 2.1, rate, seed=1)
    est = _distort(refs, rng, rate)[:, : refs.shape[1] - 700]
    out.append(dict(name='musdb_pair', call='evaluate', rate=rate, window=rate, hop=rate, filters_len=512,
                    sources=['vocals', 'accompaniment'], refs=refs, est=est))

    # Four stems, 1 s windows at 4 kHz; a silent reference window and a silent estimate window; estimates longer.
    rate = 4000
    refs = _sources(4, 20.0 if full else 5.5, rate, seed=2)
    _zero(refs, 3, 1 * rate, 2 * rate)
    est = _distort(refs, rng, rate)
    est = np.concatenate([est, 0.01 * rng.standard_normal((4, 300, 2))], axis=1)
    _zero(est, 0, 2 * rate, 3 * rate)
    out.append(dict(name='four_stems', call='evaluate', rate=rate, window=rate, hop=rate, filters_len=512,
                    sources=['vocals', 'drums', 'bass', 'other'], refs=refs, est=est))

    # 64-tap filters, overlapping windows; one source in antiphase for a window (channel sum zero: "silent").
    rate = 8000
    refs = _sources(3, 6.0 if full else 2.5, rate, seed=3)
    refs[1, 6000:14000, 1] = -refs[1, 6000:14000, 0]
    est = _distort(refs, rng, rate)
    out.append(dict(name='filters_64', call='bss_eval', rate=rate, window=8000, hop=6000, filters_len=64,
                    sources=['a', 'b', 'c'], refs=refs, est=est))
    return out


def _errors(museval) -> list[dict]:
    """museval refuses a wholly silent estimate or reference: keep its messages."""
    rng = np.random.default_rng(5)
    refs = _q16(rng.standard_normal((2, 4000, 2)) * 0.1).astype(np.float64) / 32768.0
    cases = []
    for name, which in (('silent_estimate', 'est'), ('silent_reference', 'ref')):
        r, e = refs.copy(), refs[::-1].copy()
        (e if which == 'est' else r)[1] = 0
        try:
            museval.evaluate(r, e, win=1000, hop=1000)
            raise SystemExit(f'museval accepted a {name.replace("_", " ")}')
        except ValueError as err:
            cases.append({'name': name, 'silent': which, 'message': str(err)})
    return cases


def _frames_median(museval, values: dict[str, np.ndarray], j: int, win: float, hop: float) -> dict[str, float]:
    """The per-track figure as museval's TrackStore makes it: values quantised to 1e-5, infinities stored as NaN,
    then np.nanmedian over the windows."""
    store = museval.TrackStore(win=win, hop=hop, track_name='golden')
    store.add_target(target_name='t', values={k: values[k][j].tolist() for k in ('SDR', 'ISR', 'SIR', 'SAR')})
    frames = store.scores['targets'][0]['frames']
    return {k: float(store.frames_agg([float(f['metrics'][k]) for f in frames])) for k in ('SDR', 'ISR', 'SIR', 'SAR')}


def generate(out_dir: pathlib.Path, size: str) -> None:
    museval = _import_museval()
    tensors: dict[str, np.ndarray] = {}
    described = []
    for s in _scenarios(size):
        ref16, est16 = _q16(s['refs']), _q16(s['est'])
        refs, est = ref16.astype(np.float64) / 32768.0, est16.astype(np.float64) / 32768.0
        if s['call'] == 'evaluate':
            sdr, isr, sir, sar = museval.evaluate(refs, est, win=s['window'], hop=s['hop'], mode='v4')
        else:
            sdr, isr, sir, sar, _ = museval.metrics.bss_eval(
                refs, est, window=s['window'], hop=s['hop'], compute_permutation=False,
                filters_len=s['filters_len'], framewise_filters=False, bsseval_sources_version=False)
        name = s['name']
        tensors[f'{name}.reference'] = np.ascontiguousarray(ref16)
        tensors[f'{name}.estimate'] = np.ascontiguousarray(est16)
        values = {'SDR': np.asarray(sdr), 'ISR': np.asarray(isr), 'SIR': np.asarray(sir), 'SAR': np.asarray(sar)}
        for k, v in values.items():
            tensors[f'{name}.{k.lower()}'] = np.ascontiguousarray(v, dtype=np.float64)
        medians = [_frames_median(museval, values, j, s['window'] / s['rate'], s['hop'] / s['rate']) for j in range(len(s['sources']))]
        for k in ('SDR', 'ISR', 'SIR', 'SAR'):
            tensors[f'{name}.median_{k.lower()}'] = np.array([m[k] for m in medians], dtype=np.float64)
        described.append({key: s[key] for key in ('name', 'call', 'rate', 'window', 'hop', 'filters_len', 'sources')}
                         | {'windows': int(values['SDR'].shape[1]),
                            'nan_windows': [int(t) for t in np.where(np.isnan(values['SDR'][0]))[0]]})
    save_file(tensors, str(pathlib.Path(out_dir) / 'golden.safetensors'))
    write_case(out_dir, 'bsseval', museval=museval.__version__ if hasattr(museval, '__version__') else '0.4.1',
               int16_scale=32768, scenarios=described, errors=_errors(museval))
