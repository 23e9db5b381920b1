"""Shared helpers for the reference harness's case modules (harness/cases/<case>.py).

A case module defines ``generate(out_dir: pathlib.Path, size: str)`` (size 'small' or 'full') and writes into
``out_dir``: the weights in the authors' own format, ``golden.safetensors`` and ``case.json``. These helpers keep
the cases' files alike, so the TypeScript side (test/engines/reference/<family>.ts) can read every case one way:

- ``seed(n)``: seeds torch, numpy and random; call it first in every ``generate``.
- ``randomize(module, seed, std=0.05)``: replaces every parameter and floating buffer of a torch module with seeded
  normal noise (norm weights around 1), so no layer keeps an initialisation that hides a wrong wiring (a LayerNorm
  with weight 1 and bias 0, a zero-initialised projection).
- ``mixture(seconds, sample_rate, seed, channels=2)``: a deterministic music-like stereo test signal, float32
  [channels, samples].
- ``write_golden(out_dir, input, outputs, net=None)``: writes golden.safetensors with ``input``, ``output.<stem>``
  and optional ``net.<name>`` tensors, all float32 and contiguous.
- ``write_case(out_dir, family, **config)``: writes case.json; ``family`` picks the comparison module
  test/engines/reference/<family>.ts.

Run case modules through harness/generate.py, which puts harness/ on sys.path (so ``from common import ...`` and
``import reference_imports`` work). Importing this module imports reference_imports, which must come before any
import of demucs or audio_separator.
"""
from __future__ import annotations

import json
import math
import pathlib
import random
from typing import Mapping

import numpy as np
import torch
from safetensors.numpy import save_file

import reference_imports  # noqa: F401  (must precede demucs/audio_separator imports in every case)

__all__ = ['seed', 'randomize', 'mixture', 'write_golden', 'write_case', 'SIZES']

SIZES = ('small', 'full')


def seed(n: int) -> None:
    """Seeds every generator a reference implementation may draw from, so reruns write the same bytes."""
    random.seed(n)
    np.random.seed(n)
    torch.manual_seed(n)


def _is_norm_scale(name: str, tensor: torch.Tensor) -> bool:
    # Norm layers' scales ('weight' of a 1-D parameter, 'gamma', 'scale') multiply activations: noise around 1 keeps
    # the signal's size while still making every channel different; noise around 0 would silence the layer.
    leaf = name.rsplit('.', 1)[-1]
    return tensor.dim() == 1 and leaf in ('weight', 'gamma', 'scale', 'g')


@torch.no_grad()
def randomize(module: torch.nn.Module, seed_value: int, std: float = 0.05) -> torch.nn.Module:
    """Fills a module's parameters and floating buffers with seeded noise (in place; returns the module).

    The caller picks ``std`` so activations stay finite through the network's depth. Integer buffers (counters,
    indices) and buffers whose name says they are fixed tables (``window``, ``freq``, ``mel``, ``running_var``) are
    left as the reference built them; ``running_mean`` is zeroed.
    """
    gen = torch.Generator().manual_seed(seed_value)
    for name, p in module.named_parameters():
        noise = torch.randn(p.shape, generator=gen, dtype=torch.float32) * std
        p.copy_((noise + 1.0 if _is_norm_scale(name, p) else noise).to(p.dtype))
    for name, b in module.named_buffers():
        if not b.is_floating_point():
            continue
        leaf = name.rsplit('.', 1)[-1].lower()
        if any(k in leaf for k in ('window', 'freq', 'mel', 'running_var')):
            continue
        if 'running_mean' in leaf:
            b.zero_()
            continue
        b.copy_((torch.randn(b.shape, generator=gen, dtype=torch.float32) * std).to(b.dtype))
    return module


def mixture(seconds: float, sample_rate: int, seed_value: int, channels: int = 2) -> np.ndarray:
    """A deterministic music-like test mixture, float32 [channels, samples], peak about 0.5.

    Harmonic tones (a few partials with decaying amplitude) that start and stop at different times, panned
    differently per channel, plus short filtered noise bursts (drum-like) and a low noise floor. Real separation
    networks are not what is tested here, but the signal has structure across the whole spectrum and over time,
    so STFT edges, chunk borders and overlap weights all see non-trivial content.
    """
    rng = np.random.default_rng(seed_value)
    n = int(round(seconds * sample_rate))
    t = np.arange(n, dtype=np.float64) / sample_rate
    out = np.zeros((channels, n), dtype=np.float64)
    for _ in range(5):
        f0 = float(rng.uniform(80.0, 880.0))
        start, length = rng.uniform(0, seconds * 0.5), rng.uniform(seconds * 0.3, seconds)
        env = np.clip((t - start) * 20.0, 0.0, 1.0) * np.clip((start + length - t) * 20.0, 0.0, 1.0)
        tone = sum((0.6 ** k) * np.sin(2 * math.pi * f0 * (k + 1) * t + rng.uniform(0, 2 * math.pi)) for k in range(6))
        pan = rng.uniform(0.2, 0.8, size=channels)
        out += pan[:, None] * (env * tone)[None, :]
    burst_len = max(1, int(0.05 * sample_rate))
    decay = np.exp(-np.arange(burst_len) / (0.01 * sample_rate))
    for _ in range(max(1, int(seconds * 4))):
        at = int(rng.integers(0, max(1, n - burst_len)))
        noise = rng.standard_normal((channels, burst_len))
        # A one-pole low-pass on half the bursts makes some kick-like, some hat-like.
        if rng.uniform() < 0.5:
            for i in range(1, burst_len):
                noise[:, i] = 0.8 * noise[:, i - 1] + 0.2 * noise[:, i]
        out[:, at:at + burst_len] += 0.5 * noise * decay[None, :]
    out += 0.01 * rng.standard_normal(out.shape)
    out *= 0.5 / max(float(np.max(np.abs(out))), 1e-9)
    return out.astype(np.float32)


def _f32(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32))


def write_golden(out_dir: pathlib.Path, input, outputs: Mapping[str, object],
                 net: Mapping[str, object] | None = None) -> pathlib.Path:
    """Writes out_dir/golden.safetensors: ``input``, ``output.<stem>`` per stem, ``net.<name>`` per extra tensor."""
    tensors = {'input': _f32(input)}
    for stem, value in outputs.items():
        tensors[f'output.{stem}'] = _f32(value)
    for name, value in (net or {}).items():
        tensors[f'net.{name}'] = _f32(value)
    path = pathlib.Path(out_dir) / 'golden.safetensors'
    save_file(tensors, str(path))
    return path


def write_case(out_dir: pathlib.Path, family: str, **config) -> pathlib.Path:
    """Writes out_dir/case.json: {"family": family, ...config}, keys sorted so reruns give the same bytes."""
    path = pathlib.Path(out_dir) / 'case.json'
    path.write_text(json.dumps({'family': family, **config}, indent=2, sort_keys=True) + '\n')
    return path
