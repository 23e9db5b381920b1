"""WPE dereverberation as nara_wpe 0.0.11 (the reference implementation, Drude et al. 2018) computes it.

Soundry's WPE (src/engines/enhance/dereverb.ts) is block-online: statistics of one block of frames (plus a
forgetting-weighted sum of earlier blocks), iterated, solved per frequency bin. With one block that holds every
frame and no earlier statistics it is nara_wpe's offline ``wpe`` (``wpe_v8``: per bin, ``iterations`` times: weights
1 / max(|X|^2, 1e-10 max |X|^2), R = sum Y~ Y~^H / power, P = sum Y~ Y^* / power, G = solve(R, P), X = Y - G^H Y~,
statistics_mode 'full', i.e. zeros before the first frame). That path is what this case proves: the golden holds a
reverberant signal's STFT (nara_wpe.utils.stft, 512/128 at 16 kHz, its Blackman window) and nara's output for several
(taps, delay, iterations), and test/engines/reference/wpe.ts runs ``wpeOffline`` on the same STFT with nara's power
floor and no diagonal loading. Soundry's own STFT framing and its streaming blocks are not part of the comparison
(they cannot equal an offline reference); bench/dereverb.ts measures the streaming stage against nara on speech.

The signal: seeded noise with a syllable-rate envelope (so the weighted statistics see power changing as in speech),
convolved with a seeded exponentially decaying random RIR (T60 0.5 s at full size, 0.4 s small) after a direct path.
No corpus file goes into a golden.

Besides ``generate`` (through harness/generate.py) this module is a small command line used by bench/dereverb.ts:

  harness/.venv/bin/python harness/cases/wpe.py nara IN.wav OUT.wav [--taps 10 --delay 3 --iterations 3]
  harness/.venv/bin/python harness/cases/wpe.py nara-online IN.wav OUT.wav [--taps 10 --delay 3 --alpha 0.9999]
  harness/.venv/bin/python harness/cases/wpe.py dnsmos A.wav [B.wav ...]      # JSON lines: file, SIG, BAK, OVRL

``nara`` runs nara_wpe's offline ``wpe`` with its own STFT (size 512, shift 128: the settings of its examples at
16 kHz) and istft; ``nara-online`` its frame-recursive ``OnlineWPE`` (the example notebook's taps 10, delay 3,
alpha 0.9999, power from the taps + delay + 1 frame buffer).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

CONFIGS = ((10, 3, 3), (10, 3, 1), (5, 2, 2))
SIZE, SHIFT = 512, 128


def _signal(seconds: float, rate: int, t60: float, seed_value: int) -> np.ndarray:
    rng = np.random.default_rng(seed_value)
    n = int(round(seconds * rate))
    t = np.arange(n) / rate
    env = np.maximum(0.0, np.sin(2 * np.pi * 3.7 * t + rng.uniform(0, 6.3))) ** 2
    env *= 0.5 + 0.5 * np.abs(np.sin(2 * np.pi * 0.6 * t))
    dry = rng.standard_normal(n) * env
    m = int(t60 * rate)
    rir = rng.standard_normal(m) * np.exp(-6.9078 * np.arange(m) / (t60 * rate))
    rir[: int(0.002 * rate)] = 0.0
    rir[0] = 4.0
    wet = np.convolve(dry, rir)[:n]
    return (0.3 * wet / np.max(np.abs(wet))).astype(np.float32)


def generate(out_dir: pathlib.Path, size: str) -> None:
    from common import seed, write_case, write_golden
    from nara_wpe.utils import stft
    from nara_wpe.wpe import wpe_v8

    seed(5120)
    full = size == 'full'
    rate = 16000
    y = _signal(4.0 if full else 0.5, rate, 0.5 if full else 0.4, 5121)
    Y = stft(y.astype(np.float64), size=SIZE, shift=SHIFT)  # (T, F), complex128
    # The golden stores float32: the reference runs on exactly what the TypeScript side reads back.
    Y = Y.astype(np.complex64).astype(np.complex128)
    outputs = {}
    for taps, delay, iterations in CONFIGS:
        X = wpe_v8(Y.T[:, None, :], taps=taps, delay=delay, iterations=iterations, statistics_mode='full')[:, 0, :].T
        outputs[f'k{taps}_d{delay}_i{iterations}'] = np.stack([X.real, X.imag])
    write_golden(out_dir, np.stack([Y.real, Y.imag]), outputs)
    write_case(out_dir, 'wpe', configs=[{'taps': k, 'delay': d, 'iterations': i, 'output': f'k{k}_d{d}_i{i}'}
                                        for k, d, i in CONFIGS],
               frames=int(Y.shape[0]), bins=int(Y.shape[1]), stft={'size': SIZE, 'shift': SHIFT, 'window': 'blackman'},
               sample_rate=rate, reference='nara_wpe 0.0.11 wpe_v8, psd_context 0, statistics_mode full')
    print(f'wpe: {Y.shape[0]} frames x {Y.shape[1]} bins, configs {CONFIGS}', flush=True)


def _read(path: str) -> tuple[np.ndarray, int]:
    import soundfile as sf
    x, rate = sf.read(path, dtype='float64', always_2d=True)
    return x.mean(axis=1), rate


def _write(path: str, x: np.ndarray, rate: int) -> None:
    import soundfile as sf
    sf.write(path, x.astype(np.float32), rate, subtype='FLOAT')


def _nara(args) -> None:
    from nara_wpe.utils import istft, stft
    from nara_wpe.wpe import wpe_v8
    x, rate = _read(args.input)
    Y = stft(x, size=SIZE, shift=SHIFT)
    X = wpe_v8(Y.T[:, None, :], taps=args.taps, delay=args.delay, iterations=args.iterations, statistics_mode='full')
    y = istft(X[:, 0, :].T, size=SIZE, shift=SHIFT)[: len(x)]
    _write(args.output, y, rate)


def _nara_online(args) -> None:
    from nara_wpe.utils import istft, stft
    from nara_wpe.wpe import OnlineWPE
    x, rate = _read(args.input)
    Y = stft(x, size=SIZE, shift=SHIFT)[:, :, None]  # (T, F, D=1)
    T, F, _ = Y.shape
    k, d = args.taps, args.delay
    online = OnlineWPE(taps=k, delay=d, alpha=args.alpha, channel=1, frequency_bins=F)
    out = np.zeros_like(Y)
    # The example's loop: the first taps + delay + 1 frames fill the buffer, each later frame is one step.
    for t in range(T):
        if t < k + d + 1:
            online.buffer = np.roll(online.buffer, -1, axis=0)
            online.buffer[-1] = Y[t]
            online.power = np.mean(np.abs(online.buffer) ** 2, axis=(0, 2))
            out[t] = Y[t]
            continue
        out[t] = online.step_frame(Y[t])
    y = istft(out[:, :, 0], size=SIZE, shift=SHIFT)[: len(x)]
    _write(args.output, y, rate)


def _dnsmos(args) -> None:
    from speechmos import dnsmos
    for path in args.files:
        x, rate = _read(path)
        if rate != 16000:
            raise SystemExit(f'{path}: DNSMOS needs 16 kHz, got {rate}')
        peak = float(np.max(np.abs(x))) if len(x) else 0.0
        # speechmos refuses samples outside [-1, 1]; scaling does not change DNSMOS much but is reported.
        r = dnsmos.run(x / peak if peak > 1 else x, 16000)
        print(json.dumps({'file': path, 'sig': float(r['sig_mos']), 'bak': float(r['bak_mos']),
                          'ovrl': float(r['ovrl_mos']), 'scaled': peak > 1}), flush=True)


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest='cmd', required=True)
    a = sub.add_parser('nara')
    a.add_argument('input'), a.add_argument('output')
    a.add_argument('--taps', type=int, default=10), a.add_argument('--delay', type=int, default=3)
    a.add_argument('--iterations', type=int, default=3)
    o = sub.add_parser('nara-online')
    o.add_argument('input'), o.add_argument('output')
    o.add_argument('--taps', type=int, default=10), o.add_argument('--delay', type=int, default=3)
    o.add_argument('--alpha', type=float, default=0.9999)
    s = sub.add_parser('dnsmos')
    s.add_argument('files', nargs='+')
    args = p.parse_args(argv)
    {'nara': _nara, 'nara-online': _nara_online, 'dnsmos': _dnsmos}[args.cmd](args)


if __name__ == '__main__':
    main(sys.argv[1:])
