"""Mel-Band RoFormer as python-audio-separator 0.47.1 runs it; see _roformer.py.

full: the configuration of Kimberley Jensen's vocal Mel-Band RoFormer (MelBandRoformer.ckpt), values from
ZFTurbo/Music-Source-Separation-Training configs/KimberleyJensen/config_vocals_mel_band_roformer_kj.yaml (read at
commit 4a9f4d74ba06fb271fdc92c5c6528dfb79fc90bd; the author's own configs/config_vocals_mel_band_roformer.yaml in
KimberleyJensen/Mel-Band-Roformer-Vocal-Model has the same model section): dim 384, depth 6, stereo, num_stems 1,
time/freq_transformer_depth 1, num_bands 60, dim_head 64, heads 8, attn/ff dropout 0, flash_attn true, sample_rate
44100, stft n_fft 2048 / hop 441 / win 2048, unnormalised, mask_estimator_depth 2; inference dim_t 256 (so
audio-separator's chunk is 441 * 255 = 112455 samples; the audio section's chunk_size 352800 is what ZFTurbo's own
inference uses) and num_overlap 2; instruments [vocals, other], target vocals. The real file is 913,106,900 bytes;
the parameter count a full run prints, at 4 bytes each, is that size: the released file is float32.
small: the same architecture scaled down (n_fft 256, 8 mel bands, dim 16, depth 2), and with two stems and no
target instrument, so the multi-stem path (one mask estimator per stem, no residual stem) is proved too.
"""
from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _roformer import run_case  # noqa: E402


def _config(size: str) -> dict:
    full = size == 'full'
    n_fft, hop = (2048, 441) if full else (256, 64)
    model = {
        'dim': 384 if full else 16,
        'depth': 6 if full else 2,
        'stereo': True,
        'num_stems': 1 if full else 2,
        'time_transformer_depth': 1,
        'freq_transformer_depth': 1,
        'num_bands': 60 if full else 8,
        'dim_head': 64 if full else 8,
        'heads': 8 if full else 2,
        'attn_dropout': 0,
        'ff_dropout': 0,
        'flash_attn': True,
        'dim_freqs_in': n_fft // 2 + 1,
        'sample_rate': 44100,
        'stft_n_fft': n_fft,
        'stft_hop_length': hop,
        'stft_win_length': n_fft,
        'stft_normalized': False,
        'mask_estimator_depth': 2,
    }
    dim_t = 256 if full else 33
    training = {'instruments': ['vocals', 'other'], 'target_instrument': 'vocals' if full else None}
    return {
        'audio': {'chunk_size': 352800 if full else hop * (dim_t - 1), 'dim_f': 1024, 'dim_t': dim_t, 'hop_length': hop,
                  'n_fft': n_fft, 'num_channels': 2, 'sample_rate': 44100, 'min_mean_abs': 0.0},
        'model': model,
        'training': training,
        'inference': {'batch_size': 4, 'dim_t': dim_t, 'num_overlap': 2},
    }


def generate(out_dir: pathlib.Path, size: str) -> None:
    cfg = _config(size)
    chunk = cfg['model']['stft_hop_length'] * (cfg['inference']['dim_t'] - 1)
    seconds = (chunk * 1.3 if size == 'full' else chunk * 2.7) / 44100
    run_case(out_dir, arch='mel_band_roformer', cfg=cfg, seconds=seconds, seed_value=4410, std=0.05,
             source_note='ZFTurbo/Music-Source-Separation-Training configs/KimberleyJensen/config_vocals_mel_band_roformer_kj.yaml'
             if size == 'full' else 'scaled-down Mel-Band RoFormer (harness/cases/roformer_mel.py)')
