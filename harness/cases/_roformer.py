"""Shared part of the RoFormer cases (roformer_bs.py, roformer_mel.py): BS-RoFormer and Mel-Band RoFormer run by
python-audio-separator 0.47.1 itself, on seeded random weights saved the way ZFTurbo/UVR release them.

What runs is the reference's own path end to end:
- the configuration is a YAML file shaped like the released ones (``audio``/``model``/``training``/``inference``,
  ``freqs_per_bands`` as ``!!python/tuple``), loaded as audio-separator loads it;
- the weights are a plain state dict written with ``torch.save`` (the released ``.ckpt`` files are exactly that:
  ``torch.load`` gives an OrderedDict of float32 tensors, which ``RoformerLoader`` passes to ``load_state_dict``),
  and the model the golden comes from is the one ``RoformerLoader.load_model`` builds from that file and that YAML;
- the stems come from ``MDXCSeparator.demix`` (chunks of ``stft_hop_length * (inference.dim_t - 1)`` samples every
  ``chunk // num_overlap``, a last chunk aligned to the end, each chunk's output weighted by a Hamming window, summed
  and divided by the summed windows; a single-target model's second stem is the mixture minus the first).
  ``demix`` is called on a bare MDXCSeparator carrying only the attributes it reads, because constructing one needs
  the model-download machinery; the short-input segment override that ``separate`` applies below 10 s is not used:
  the model's own ``dim_t`` sets the chunk, as it does for songs.

Attention: the reference's ``Attend`` runs ``F.scaled_dot_product_attention`` under its own ``sdpa_kernel`` choice
(flash, then efficient, then math on CPU). The harness leaves that as it is (that is what users run) and also runs
the same chunk with every ``Attend.flash`` off (the plain softmax(QK^T)V einsum path) and prints how far the two are
apart, so the golden is known to be the math result within float32 rounding.

The same weights are also written as safetensors (model.safetensors), for readers that take that format.
"""
from __future__ import annotations

import copy
import logging
import pathlib
import time

import numpy as np
import torch
import yaml
from safetensors.torch import save_file as save_safetensors

from common import mixture, randomize, seed, write_case, write_golden

from audio_separator.separator.architectures.mdxc_separator import MDXCSeparator
from audio_separator.separator.roformer.roformer_loader import RoformerLoader
from ml_collections import ConfigDict
from rotary_embedding_torch import RotaryEmbedding


class _TupleDumper(yaml.Dumper):
    """Writes tuples as ``!!python/tuple`` sequences, as the released configs spell ``freqs_per_bands``."""


def _tuple_representer(dumper, data):
    return dumper.represent_sequence('tag:yaml.org,2002:python/tuple', list(data))


_TupleDumper.add_representer(tuple, _tuple_representer)


def _load_yaml(path: pathlib.Path) -> dict:
    # audio-separator reads model YAMLs with yaml.load(..., Loader=yaml.FullLoader), which builds the tuples back.
    return yaml.load(path.read_text(), Loader=yaml.FullLoader)


def _randomize(model: torch.nn.Module, seed_value: int, std: float) -> None:
    randomize(model, seed_value, std)
    # Rotary frequencies are a Parameter (so they are in the released files) but never trained: put the real
    # 1 / 10000^(2i/d) values back, so positions rotate as much as in a real model (the graph reads them from the file).
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, RotaryEmbedding):
                d = m.freqs.shape[0] * 2
                m.freqs.copy_(1.0 / (10000 ** (torch.arange(0, d, 2)[: d // 2].float() / d)))


def _bare_separator(model, cfg: dict) -> MDXCSeparator:
    sep = MDXCSeparator.__new__(MDXCSeparator)
    sep.logger = logging.getLogger('roformer-case')
    sep.pitch_shift = 0
    sep.override_model_segment_size = False
    sep.segment_size = 256
    sep.is_roformer = True
    sep.model_run = model
    sep.model_data_cfgdict = ConfigDict(cfg)
    sep.overlap = cfg['inference']['num_overlap']
    sep.is_torch_compiled = False
    target = cfg['training'].get('target_instrument')
    sep.is_primary_stem_main_target = bool(target)
    if target:
        others = [s for s in cfg['training']['instruments'] if s != target]
        sep.primary_stem_name, sep.secondary_stem_name = target, others[0]
    return sep


def _set_flash(model: torch.nn.Module, on: bool) -> None:
    for m in model.modules():
        if m.__class__.__name__ == 'Attend':
            m.flash = on


def saved_and_reloaded(out_dir: pathlib.Path, cfg: dict, seed_value: int, std: float, *, half: bool = False):
    """Builds the model from the YAML with no weights file yet (the loader then keeps the constructor's
    initialisation), seeds every parameter, writes the state dict as model.ckpt (torch.save; fp16 when `half`, as the
    MVSep Mega file is) and model.safetensors, and returns the model the reference loads back from the .ckpt, with
    its parameter count: the golden comes from that model, as users' runs do."""
    loader = RoformerLoader()
    built = loader.load_model(str(out_dir / 'absent.ckpt'), cfg, 'cpu')
    if not built.success:
        raise RuntimeError(built.error_message)
    model = built.model
    _randomize(model, seed_value, std)
    state = model.state_dict()
    if half:
        state = {k: v.half() for k, v in state.items()}
    params = sum(t.numel() for t in {id(t): t for t in state.values()}.values())
    ckpt_path = out_dir / 'model.ckpt'
    torch.save(state, str(ckpt_path))
    save_safetensors({k: v.contiguous().clone() for k, v in state.items()}, str(out_dir / 'model.safetensors'))
    loaded = loader.load_model(str(ckpt_path), cfg, 'cpu')
    if not loaded.success:
        raise RuntimeError(loaded.error_message)
    return loaded.model.eval(), params


def run_case(out_dir: pathlib.Path, *, arch: str, cfg: dict, seconds: float, seed_value: int, std: float,
             source_note: str) -> None:
    seed(seed_value)
    out_dir = pathlib.Path(out_dir)
    yaml_path = out_dir / 'config.yaml'
    ckpt_path = out_dir / 'model.ckpt'
    yaml_path.write_text(yaml.dump(cfg, Dumper=_TupleDumper, sort_keys=False))
    cfg = _load_yaml(yaml_path)

    model, params = saved_and_reloaded(out_dir, cfg, seed_value, std)

    mix = mixture(seconds, cfg['audio']['sample_rate'], seed_value + 1)
    sep = _bare_separator(model, cfg)
    started = time.monotonic()
    with torch.no_grad():
        stems = sep.demix(mix, override_model_segment_size=False)
    demix_s = time.monotonic() - started
    if not isinstance(stems, dict):
        stems = {cfg['training']['instruments'][0]: stems}

    hop = cfg['model']['stft_hop_length']
    chunk = hop * (cfg['inference']['dim_t'] - 1)
    net = {}
    with torch.no_grad():
        part = torch.from_numpy(mix[:, :chunk].copy())
        masks = []
        hooks = [m.register_forward_hook(lambda _m, _i, o: masks.append(o.detach().clone())) for m in model.mask_estimators]
        y = model(part[None])[0]
        for h in hooks:
            h.remove()
        _set_flash(model, False)
        y_math = model(part[None])[0]
        _set_flash(model, True)
    net['chunk_in'] = part
    net['chunk_out'] = y
    for i, m in enumerate(masks):
        net[f'mask_raw.{i}'] = m[0]
    extra = {}
    if arch == 'mel_band_roformer':
        net['freq_indices'] = model.freq_indices.float()
        net['num_bands_per_freq'] = model.num_bands_per_freq.float()
        # The band layout at Kim's real configuration (60 bands, n_fft 2048, 44.1 kHz), from the reference's own
        # buffers of a tiny model built with those STFT and band settings, so the committed small golden also proves
        # the librosa mel-filter computation at the real size.
        from audio_separator.separator.uvr_lib_v5.roformer.mel_band_roformer import MelBandRoformer
        real = MelBandRoformer(dim=8, depth=1, stereo=True, num_bands=60, dim_head=8, heads=1, sample_rate=44100,
                               stft_n_fft=2048, stft_hop_length=441, stft_win_length=2048)
        net['real_bands.freq_indices'] = real.freq_indices.float()
        net['real_bands.num_bands_per_freq'] = real.num_bands_per_freq.float()
        extra['real_bands'] = {'sample_rate': 44100, 'n_fft': 2048, 'num_bands': 60}
    flash_gap = float((y - y_math).abs().max() / y_math.abs().max())

    write_golden(out_dir, mix, stems, net)
    sources = list(stems)
    write_case(out_dir, 'roformer', arch=arch, weights='model.ckpt', weights_safetensors='model.safetensors',
               config='config.yaml', sources=sources, sample_rate=cfg['audio']['sample_rate'], chunk_size=chunk,
               num_overlap=cfg['inference']['num_overlap'], dim_t=cfg['inference']['dim_t'], samples=int(mix.shape[1]),
               parameters=int(params), weight_bytes=int(ckpt_path.stat().st_size), seed=seed_value,
               config_source=source_note, sdpa_vs_math_rel=flash_gap, **extra)
    print(f'{arch}: {params} parameters, {ckpt_path.stat().st_size / 1e6:.1f} MB ckpt, {mix.shape[1]} samples, '
          f'chunk {chunk}, demix {demix_s:.1f} s, sdpa vs math rel {flash_gap:.2e}', flush=True)
