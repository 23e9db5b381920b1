"""Learned dereverberation (src/engines/enhance/learned-dereverb.ts) against python-audio-separator 0.47.1: a
dereverberation Mel-Band RoFormer (instruments ``noreverb``/``reverb``, target ``noreverb``, as anvuew's
``dereverb_mel_band_roformer_anvuew_sdr_19.1729.ckpt`` is listed in audio-separator's models-scores.json) on seeded
random weights, built, saved and loaded back exactly as _roformer.py does for the separation cases, and run by
``MDXCSeparator.demix``. What the golden holds is the dry stem the enhancement keeps:

- ``output.noreverb`` for a stereo 44.1 kHz reverberant input (``input``): demix's target stem;
- ``net.mono_input`` / ``net.mono_noreverb``: a mono input, which audio-separator makes stereo by duplicating it
  (``prepare_mix``) before demix; the mono result Soundry returns is the mean of the two channels, so the golden
  stores that mean of the reference's two channels.

Not in the comparison (no reference gives the same numbers): resampling from other rates (Soundry's resampler is not
librosa/soxr; learned-dereverb.test.ts checks rates and lengths), and audio-separator's peak normalisation (inputs
here peak at 0.5, under its 0.9 threshold, as the chain's speech normally does).

full: the dereverberation model's real shape. Its yaml could not be read on these machines (no model hub reachable);
the published facts are its parameter count, 228,203,172 (equal to Kim's vocal Mel-Band RoFormer, whose yaml is
ZFTurbo's configs/KimberleyJensen/config_vocals_mel_band_roformer_kj.yaml: dim 384, depth 6, 60 bands, heads 8,
dim_head 64, STFT 2048/441, mask_estimator_depth 2), its stems and target (audio-separator's models-scores.json). So
full uses Kim's model section with the dereverberation stems; the inference section (dim_t 256, num_overlap 2) is
Kim's too and may differ from the real file's, which the engine reads at run time.
A full run builds 228,203,172 parameters, exactly the published count of the real model, so the shape is right
(its torch.save file is 913,031,723 bytes against the real 913,107,578: pickle framing), and Soundry's stage matched
the reference at rel 1.9e-6 (stereo) and 1.2e-6 (mono) (`bash harness/check.sh dereverb_roformer`, 2026-11-28, 2 cores
at load 10-15: 16 minutes to generate, 2.6 minutes to compare with one onnxruntime thread).
small: the same architecture scaled down (n_fft 256, 8 bands, dim 16, depth 2) with the same stems and target.
"""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _roformer import _TupleDumper, _bare_separator, _load_yaml, saved_and_reloaded  # noqa: E402
from common import seed, write_case, write_golden  # noqa: E402

import yaml  # noqa: E402


def _config(size: str) -> dict:
    full = size == 'full'
    n_fft, hop = (2048, 441) if full else (256, 64)
    model = {
        'dim': 384 if full else 16, 'depth': 6 if full else 2, 'stereo': True, 'num_stems': 1,
        'time_transformer_depth': 1, 'freq_transformer_depth': 1, 'num_bands': 60 if full else 8,
        'dim_head': 64 if full else 8, 'heads': 8 if full else 2, 'attn_dropout': 0, 'ff_dropout': 0,
        'flash_attn': True, 'dim_freqs_in': n_fft // 2 + 1, 'sample_rate': 44100, 'stft_n_fft': n_fft,
        'stft_hop_length': hop, 'stft_win_length': n_fft, 'stft_normalized': False, 'mask_estimator_depth': 2,
    }
    dim_t = 256 if full else 33
    return {
        'audio': {'chunk_size': 352800 if full else hop * (dim_t - 1), 'dim_f': 1024, 'dim_t': dim_t, 'hop_length': hop,
                  'n_fft': n_fft, 'num_channels': 2, 'sample_rate': 44100, 'min_mean_abs': 0.0},
        'model': model,
        'training': {'instruments': ['noreverb', 'reverb'], 'target_instrument': 'noreverb'},
        'inference': {'batch_size': 1, 'dim_t': dim_t, 'num_overlap': 2},
    }


def _reverberant(seconds: float, rate: int, seed_value: int, channels: int) -> np.ndarray:
    """Syllable-rate modulated noise and tones through a seeded exponentially decaying RIR per channel, peak 0.5."""
    rng = np.random.default_rng(seed_value)
    n = int(round(seconds * rate))
    t = np.arange(n) / rate
    env = np.maximum(0.0, np.sin(2 * np.pi * 3.3 * t)) ** 2
    dry = env * (0.5 * rng.standard_normal(n) + np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 360 * t))
    m = int(0.3 * rate)
    out = np.zeros((channels, n))
    for c in range(channels):
        rir = rng.standard_normal(m) * np.exp(-6.9 * np.arange(m) / m)
        rir[0] = 3.0
        out[c] = np.convolve(dry, rir)[:n]
    return (0.5 * out / np.max(np.abs(out))).astype(np.float32)


def generate(out_dir: pathlib.Path, size: str) -> None:
    seed_value = 7310
    seed(seed_value)
    out_dir = pathlib.Path(out_dir)
    cfg = _config(size)
    (out_dir / 'config.yaml').write_text(yaml.dump(cfg, Dumper=_TupleDumper, sort_keys=False))
    cfg = _load_yaml(out_dir / 'config.yaml')
    model, params = saved_and_reloaded(out_dir, cfg, seed_value, 0.05)
    # The safetensors copy is the separation cases' business; the dereverberation model ships as .ckpt only.
    (out_dir / 'model.safetensors').unlink()
    chunk = cfg['model']['stft_hop_length'] * (cfg['inference']['dim_t'] - 1)
    seconds = (chunk * 1.3 if size == 'full' else chunk * 2.7) / 44100
    stereo = _reverberant(seconds, 44100, seed_value + 1, 2)
    mono = _reverberant(seconds * 0.8, 44100, seed_value + 2, 1)[0]
    sep = _bare_separator(model, cfg)
    with torch.no_grad():
        stems = sep.demix(stereo, override_model_segment_size=False)
        # prepare_mix: a 1-D mix becomes [mix, mix].
        mono_stems = sep.demix(np.asfortranarray([mono, mono]), override_model_segment_size=False)
    dry = stems['noreverb']
    mono_dry = mono_stems['noreverb'].mean(axis=0, keepdims=True)
    write_golden(out_dir, stereo, {'noreverb': dry}, {'mono_input': mono[None], 'mono_noreverb': mono_dry})
    write_case(out_dir, 'dereverb', weights='model.ckpt', config='config.yaml', dry_stem='noreverb',
               sample_rate=44100, chunk_size=chunk, num_overlap=cfg['inference']['num_overlap'],
               parameters=int(params), seed=seed_value,
               config_source="Kim's vocal Mel-Band RoFormer shape with the dereverberation stems (see the module doc)"
               if size == 'full' else 'scaled-down dereverberation Mel-Band RoFormer (harness/cases/dereverb_roformer.py)')
    print(f'dereverb_roformer: {params} parameters, {stereo.shape[1]} + {mono.shape[0]} samples, chunk {chunk}', flush=True)
