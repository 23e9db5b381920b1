"""A multi-instrument BS-RoFormer shaped like the MVSep Mega 53-stem model, as python-audio-separator 0.47.1 runs it;
the shared machinery is in _roformer.py.

What the MVSep Mega model (ZFTurbo release v1.0.21) has that the vocal cases do not, and how each is reproduced:
- no target_instrument: one mask-estimator head per instrument, every head an output, no residual stem;
- mask-estimator ``mlp_expansion_factor: 2`` (RoformerLoader passes it to BSRoformer; the hidden width is dim * 2);
- weights stored as float16 (the released file is torch.save of a half state dict): the .ckpt here is one too, and
  the golden comes from the model RoformerLoader builds from it (load_state_dict copies the fp16 values into the
  float32 model, which is what a user of audio-separator runs);
- a chunk that is not a multiple of the STFT hop (Mega: inference.chunk_size 882000, hop 512). audio-separator never
  reads ``inference.chunk_size`` or ``audio.chunk_size``: MDXCSeparator.demix takes ``model.stft_hop_length *
  (inference.dim_t - 1)``, falling back to ``audio.hop_length`` when the model section has no stft_hop_length, and
  then the model runs its STFT with BSRoformer's own default hop, 512. That fallback is the reference's one way to a
  chunk off the hop grid, and this case takes it: the model section has no stft_hop_length (STFT hop 512),
  audio.hop_length is 441 and inference.dim_t 13, so the chunk is 441 * 12 = 5292 samples = 10.34 hops. Each
  chunk's network output is then hop * (frames - 1) = 5120 samples, shorter than the chunk; demix adds it (and the
  window) only over that length, so the last 172 samples of the end-aligned tail chunk are covered by no output and
  come out as 0 / clamp(0, 1e-10) = 0. That is the reference's behaviour and Soundry must reproduce it.
  The yaml also carries Mega's ``audio.chunk_size`` / ``inference.chunk_size`` keys (values off the hop grid), which
  audio-separator ignores; a reader that took them would run a different chunk and fail the comparison.
- What audio-separator does with a yaml that, like (as far as public copies show) Mega's, has no inference.dim_t:
  demix fails on the missing key for inputs of 10 s and more; shorter inputs use the 256-frame segment override.
  The case runs demix on such a copy of the configuration and records the outcome in case.json
  (``without_dim_t``).

small: n_fft 1024 (513 bins in 16 bands), dim 8, depth 2, 5 instruments; mixture of 1.8 chunks (3 chunks, the
last end-aligned off the step grid).
full: the Mega network at its real size with 3 heads instead of 53 (dim 256, depth 12, time/freq transformer depth
1, heads 8, dim_head 64, the 62 standard BS-RoFormer bands of n_fft 2048, STFT hop 512, mask_estimator_depth 2 with
mlp_expansion_factor 2: a trunk of about 26 M parameters and 12.3 M per head, fp16, as public descriptions of the
release file give it; see docs/model-facts.tmp.md section 5). The chunk is 441 * 100 = 44100 samples (86.13 hops),
not Mega's 882000: a 20 s chunk costs minutes per network pass on a 2-core machine, and what the chunk length
changes (the attention length) is the same code at any length.
"""
from __future__ import annotations

import copy
import pathlib
import sys
import time

import torch
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _roformer import _TupleDumper, _bare_separator, _load_yaml, saved_and_reloaded  # noqa: E402
from common import mixture, seed, write_case, write_golden  # noqa: E402


INSTRUMENTS = ['bass', 'drums', 'guitar', 'piano', 'strings']
FULL_INSTRUMENTS = ['guitar', 'piano', 'strings']
BANDS = (2, 2, 2, 2, 4, 4, 8, 8, 16, 16, 32, 32, 64, 64, 128, 129)
FULL_BANDS = (2,) * 24 + (4,) * 12 + (12,) * 8 + (24,) * 8 + (48,) * 8 + (128, 129)


def _config(size: str) -> dict:
    full = size == 'full'
    n_fft = 2048 if full else 1024
    instruments = FULL_INSTRUMENTS if full else INSTRUMENTS
    model = {
        'dim': 256 if full else 8,
        'depth': 12 if full else 2,
        'stereo': True,
        'num_stems': len(instruments),
        'time_transformer_depth': 1,
        'freq_transformer_depth': 1,
        'linear_transformer_depth': 0,
        'freqs_per_bands': FULL_BANDS if full else BANDS,
        'dim_head': 64 if full else 8,
        'heads': 8 if full else 2,
        'attn_dropout': 0.1,
        'ff_dropout': 0.1,
        'flash_attn': True,
        'dim_freqs_in': n_fft // 2 + 1,
        'stft_n_fft': n_fft,
        # no stft_hop_length: BSRoformer's default, 512 (see the module docstring)
        'stft_win_length': n_fft,
        'stft_normalized': False,
        'mask_estimator_depth': 2,
        'mlp_expansion_factor': 2,
    }
    return {
        'audio': {'chunk_size': 441000 if full else 4410, 'dim_f': 1024 if full else 512, 'dim_t': 256, 'hop_length': 441, 'n_fft': n_fft,
                  'num_channels': 2, 'sample_rate': 44100, 'min_mean_abs': 0.0},
        'model': model,
        'training': {'instruments': list(instruments), 'target_instrument': None},
        'inference': {'batch_size': 1, 'dim_t': 101 if full else 13, 'num_overlap': 2, 'chunk_size': 882000 if full else 8820},
    }


def _without_dim_t(model, cfg: dict) -> dict:
    """What demix does with a Mega-like yaml that has inference.chunk_size but no inference.dim_t."""
    cfg = copy.deepcopy(cfg)
    del cfg['inference']['dim_t']
    sep = _bare_separator(model, cfg)
    long_mix = mixture(10.5, 44100, 7)
    try:
        with torch.no_grad():
            sep.demix(long_mix, override_model_segment_size=False)
        return {'long_input': 'ran'}
    except Exception as e:  # the outcome is the record
        return {'long_input': f'{type(e).__name__}: {e}'}


def generate(out_dir: pathlib.Path, size: str) -> None:
    instruments = FULL_INSTRUMENTS if size == 'full' else INSTRUMENTS
    seed_value = 5300
    seed(seed_value)
    out_dir = pathlib.Path(out_dir)
    yaml_path = out_dir / 'config.yaml'
    ckpt_path = out_dir / 'model.ckpt'
    yaml_path.write_text(yaml.dump(_config(size), Dumper=_TupleDumper, sort_keys=False))
    cfg = _load_yaml(yaml_path)

    # The released Mega file is a half state dict; so is this one (rotary freqs included, as there).
    model, params = saved_and_reloaded(out_dir, cfg, seed_value, 0.05, half=True)
    if next(model.parameters()).dtype != torch.float32:
        raise RuntimeError('expected audio-separator to run the fp16 file in a float32 model')
    stft_hop = model.stft_kwargs['hop_length']
    chunk = cfg['audio']['hop_length'] * (cfg['inference']['dim_t'] - 1)
    assert chunk % stft_hop != 0, (chunk, stft_hop)

    mix = mixture(chunk * (1.3 if size == 'full' else 1.8) / 44100, 44100, seed_value + 1)
    sep = _bare_separator(model, cfg)
    started = time.monotonic()
    with torch.no_grad():
        stems = sep.demix(mix, override_model_segment_size=False)
    demix_s = time.monotonic() - started
    if sorted(stems) != sorted(instruments):
        raise RuntimeError(f'demix gave {sorted(stems)}')

    with torch.no_grad():
        part = torch.from_numpy(mix[:, :chunk].copy())
        y = model(part[None])[0]
    tail_zeros = int(min((abs(stems[s][:, -(chunk % stft_hop):]) == 0).all() for s in instruments))
    net = {'chunk_in': part, 'chunk_out': y}
    write_golden(out_dir, mix, stems, net)
    write_case(out_dir, 'roformer', arch='bs_roformer', weights='model.ckpt', weights_safetensors='model.safetensors',
               config='config.yaml', sources=list(instruments), sample_rate=44100, chunk_size=chunk,
               num_overlap=cfg['inference']['num_overlap'], dim_t=cfg['inference']['dim_t'], stft_hop=stft_hop,
               samples=int(mix.shape[1]), parameters=int(params), weight_bytes=int(ckpt_path.stat().st_size),
               weights_dtype='float16', seed=seed_value, tail_zero_samples=(chunk % stft_hop) if tail_zeros else 0,
               without_dim_t=_without_dim_t(model, cfg),
               config_source='MVSep Mega 53-stem BS-RoFormer network at real size, 3 of its 53 heads (harness/cases/roformer_multi.py)'
               if size == 'full' else 'scaled-down multi-instrument BS-RoFormer shaped like MVSep Mega (harness/cases/roformer_multi.py)')
    print(f'roformer_multi: {params} parameters (fp16), {ckpt_path.stat().st_size / 1e6:.2f} MB ckpt, '
          f'{mix.shape[1]} samples, chunk {chunk} (STFT hop {stft_hop}, {chunk / stft_hop:.2f} hops), '
          f'network output {y.shape[-1]} per chunk, demix {demix_s:.1f} s, tail zeros {tail_zeros}', flush=True)
