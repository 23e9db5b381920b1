"""BS-RoFormer (band-split RoPE transformer) as python-audio-separator 0.47.1 runs it; see _roformer.py.

full: the configuration of viperx's BS-RoFormer ep_317 (model_bs_roformer_ep_317_sdr_12.9755.ckpt, 12.97 dB vocals
SDR), values from ZFTurbo/Music-Source-Separation-Training configs/viperx/model_bs_roformer_ep_317_sdr_12.9755.yaml
(read at commit d9672dac1160ebe9c39aec3d3f3320190e49a5c0): dim 512, depth 12, stereo, num_stems 1,
time/freq_transformer_depth 1, linear_transformer_depth 0, the 62 freqs_per_bands below (24x2, 12x4, 8x12, 8x24,
8x48, 128, 129), dim_head 64, heads 8, flash_attn true, stft n_fft 2048 / hop 441 / win 2048, unnormalised,
mask_estimator_depth 2 (audio-separator's loader does not pass it for BS: its default is also 2), inference dim_t 801
(chunk 441 * 800 = 352800 samples, 8 s) and num_overlap 2; training instruments [vocals, other], target vocals.
The real file is 639 MB; 0.47.1's BSRoformer at this configuration holds the parameter count printed by a full run,
which at 4 bytes each is that size: the released file is float32.
small: the same architecture scaled down (n_fft 256, 12 bands, dim 32, depth 2) so the golden is committed.
"""
from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _roformer import run_case  # noqa: E402

VIPERX_BANDS = (2,) * 24 + (4,) * 12 + (12,) * 8 + (24,) * 8 + (48,) * 8 + (128, 129)


def _config(size: str) -> dict:
    full = size == 'full'
    n_fft, hop = (2048, 441) if full else (256, 64)
    model = {
        'dim': 512 if full else 32,
        'depth': 12 if full else 2,
        'stereo': True,
        'num_stems': 1,
        'time_transformer_depth': 1,
        'freq_transformer_depth': 1,
        'linear_transformer_depth': 0,
        'freqs_per_bands': VIPERX_BANDS if full else (2, 2, 2, 2, 4, 4, 8, 8, 16, 16, 32, 33),
        'dim_head': 64 if full else 16,
        'heads': 8 if full else 2,
        'attn_dropout': 0.1,
        'ff_dropout': 0.1,
        'flash_attn': True,
        'dim_freqs_in': n_fft // 2 + 1,
        'stft_n_fft': n_fft,
        'stft_hop_length': hop,
        'stft_win_length': n_fft,
        'stft_normalized': False,
        'mask_estimator_depth': 2,
    }
    dim_t = 801 if full else 33
    return {
        'audio': {'chunk_size': hop * (dim_t - 1), 'dim_f': 1024, 'dim_t': dim_t, 'hop_length': hop, 'n_fft': n_fft,
                  'num_channels': 2, 'sample_rate': 44100, 'min_mean_abs': 0.0},
        'model': model,
        'training': {'instruments': ['vocals', 'other'], 'target_instrument': 'vocals'},
        'inference': {'batch_size': 4, 'dim_t': dim_t, 'num_overlap': 2},
    }


def generate(out_dir: pathlib.Path, size: str) -> None:
    cfg = _config(size)
    chunk = cfg['model']['stft_hop_length'] * (cfg['inference']['dim_t'] - 1)
    # full: a bit over one chunk, so demix runs two chunks (the start and the end-aligned tail) that overlap.
    # small: several chunks, the last one end-aligned off the step grid.
    seconds = (chunk * 1.3 if size == 'full' else chunk * 2.7) / 44100
    run_case(out_dir, arch='bs_roformer', cfg=cfg, seconds=seconds, seed_value=3170, std=0.05,
             source_note='ZFTurbo/Music-Source-Separation-Training configs/viperx/model_bs_roformer_ep_317_sdr_12.9755.yaml'
             if size == 'full' else 'scaled-down BS-RoFormer (harness/cases/roformer_bs.py)')
