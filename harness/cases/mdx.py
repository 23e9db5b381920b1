"""MDX-Net: python-audio-separator's MDXSeparator run end to end on a seeded-random-weight ONNX model.

The model is a small torch network with the real MDX-Net I/O (``input`` [batch, 4, dim_f, dim_t] -> ``output`` of the
same shape; channels L.re, L.im, R.re, R.im): a 3x3 convolution, a TDF-style bottleneck across frequency (as the
TFC-TDF U-Net's dense layers mix every bin of a frame) and a 1x1 convolution back, plus a skip of its input so the
output keeps the mixture's scale. It is exported with torch.onnx.export (the TorchScript exporter: the dynamo one
needs onnxscript, which the harness does not install).

The reference is MDXSeparator itself, built as audio_separator.separator.Separator builds it (the same common and
MDX parameters, its defaults: segment_size = dim_t, overlap 0.25, batch 1, no denoise, normalization_threshold 0.9),
running ``separate()`` on a float WAV file. Only its file writer is replaced, by one that keeps the arrays it was
given, and ``demix`` is wrapped to record the mixture it was handed.

What the golden holds:
- ``input``: the mixture as ``separate()`` passed it to ``demix`` (after its peak normalisation to 0.9; the file's
  peak is exactly 1.0, see below);
- ``output.<primary>``: separate()'s primary stem (the network's stem, not scaled by ``compensate``);
- ``output.<secondary>``: separate()'s secondary stem, ``mix - compensate * primary``.

audio-separator 0.47.1 multiplies the primary by the file's peak (``source = self.demix(mix) * peak``); UVR and
Soundry apply no such factor. The file's peak is 1.0, where that factor is exactly 1, so the golden is what both
pipelines define; for any other peak audio-separator's stems would differ from UVR's by it (see
docs/differential-tests.md).
"""
from __future__ import annotations

import logging
import pathlib

import numpy as np
import soundfile as sf
import torch

from common import mixture, seed, write_case, write_golden

from audio_separator.separator.architectures.mdx_separator import MDXSeparator

SAMPLE_RATE = 44100

# Kim_Vocal_2 (UVR model_data.json 970b3f9492014d18fefeedfe4773cb42): n_fft 7680, dim_f 3072, dim_t 2**8, compensate
# 1.009, primary Vocals. The small geometry keeps the same shape of problem (several chunks, a short last one).
GEOMETRY = {
    'small': dict(n_fft=2048, hop=512, dim_f=512, dim_t_log2=5, compensate=1.021, seconds=0.82, channels=8),
    'full': dict(n_fft=7680, hop=1024, dim_f=3072, dim_t_log2=8, compensate=1.009, seconds=15.0, channels=8),
}


class TinyMdxNet(torch.nn.Module):
    """A stand-in with MDX-Net's I/O and enough structure that a swapped channel, a shifted bin or a misaligned frame
    changes its output: a 3x3 conv mixes neighbouring bins and frames, the bottleneck mixes all bins of a frame."""

    def __init__(self, dim_f: int, channels: int) -> None:
        super().__init__()
        self.inp = torch.nn.Conv2d(4, channels, 3, padding=1)
        self.tdf = torch.nn.Sequential(torch.nn.Linear(dim_f, dim_f // 16), torch.nn.ReLU(), torch.nn.Linear(dim_f // 16, dim_f))
        self.out = torch.nn.Conv2d(channels, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inp(x))
        h = h + self.tdf(h.transpose(-1, -2)).transpose(-1, -2)
        return 0.5 * x + self.out(h)


def _export(model: torch.nn.Module, dim_f: int, dim_t: int, path: pathlib.Path) -> None:
    example = torch.zeros(1, 4, dim_f, dim_t)
    torch.onnx.export(model, (example,), str(path), input_names=['input'], output_names=['output'],
                      dynamic_axes={'input': {0: 'batch'}, 'output': {0: 'batch'}}, opset_version=17, dynamo=False)


def _separator(model_path: pathlib.Path, out_dir: pathlib.Path, g: dict, denoise: bool = False) -> MDXSeparator:
    """MDXSeparator with the parameters Separator.load_model passes it (Separator's defaults, CPU)."""
    logger = logging.getLogger('harness.mdx')
    common = {
        'logger': logger, 'log_level': logging.WARNING,
        'torch_device': torch.device('cpu'), 'torch_device_cpu': torch.device('cpu'), 'torch_device_mps': None,
        'onnx_execution_provider': ['CPUExecutionProvider'],
        'model_name': model_path.stem, 'model_path': str(model_path),
        'model_data': {'compensate': g['compensate'], 'mdx_dim_f_set': g['dim_f'], 'mdx_dim_t_set': g['dim_t_log2'],
                       'mdx_n_fft_scale_set': g['n_fft'], 'primary_stem': 'Vocals'},
        'output_format': 'WAV', 'output_bitrate': None, 'output_dir': str(out_dir),
        'normalization_threshold': 0.9, 'amplification_threshold': 0.0, 'output_single_stem': None,
        'invert_using_spec': False, 'sample_rate': SAMPLE_RATE, 'use_soundfile': False,
        'use_autocast': False, 'use_native_fp16': False, 'use_torch_compile': False,
    }
    arch = {'hop_length': g['hop'], 'segment_size': 2 ** g['dim_t_log2'], 'overlap': 0.25, 'batch_size': 1,
            'enable_denoise': denoise}
    return MDXSeparator(common_config=common, arch_config=arch)


def generate(out_dir: pathlib.Path, size: str, denoise: bool = False) -> None:
    """Writes the case; ``denoise`` runs audio-separator's enable_denoise (the network on x and -x, averaged)."""
    g = GEOMETRY[size]
    dim_t = 2 ** g['dim_t_log2']
    seed(27)
    model = TinyMdxNet(g['dim_f'], g['channels']).eval()
    weights = out_dir / 'model.onnx'
    _export(model, g['dim_f'], dim_t, weights)

    mix = mixture(g['seconds'], SAMPLE_RATE, seed_value=2701)
    # Peak exactly 1.0 (x / x is exact), so separate()'s `* peak` is 1 and its normalisation gives a 0.9 peak.
    mix = mix / np.max(np.abs(mix))
    wav = out_dir / 'mixture.wav'
    sf.write(str(wav), mix.T, SAMPLE_RATE, subtype='FLOAT')

    sep = _separator(weights, out_dir, g, denoise)
    written: dict[str, np.ndarray] = {}
    seen: list[np.ndarray] = []
    demix = sep.demix

    def recording_demix(m, is_match_mix=False):
        if not is_match_mix:
            seen.append(np.array(m, dtype=np.float32, copy=True))
        return demix(m, is_match_mix=is_match_mix)

    sep.demix = recording_demix
    sep.write_audio = lambda stem_path, source: written.__setitem__(stem_path, np.array(source, dtype=np.float32).T)
    with torch.no_grad():
        sep.separate(str(wav))
    wav.unlink()  # the golden's `input` holds it; the WAV was only separate()'s way in

    stems = {}
    for path, source in written.items():
        name = 'vocals' if '(Vocals)' in path else 'instrumental' if '(Instrumental)' in path else None
        if name is None:
            raise RuntimeError(f'unexpected stem file name from MDXSeparator: {path}')
        stems[name] = source
    if len(seen) != 1 or set(stems) != {'vocals', 'instrumental'}:
        raise RuntimeError(f'MDXSeparator ran demix {len(seen)} times and wrote {sorted(stems)}')

    write_golden(out_dir, seen[0], stems)
    write_case(out_dir, 'mdx', weights=weights.name, sample_rate=SAMPLE_RATE, n_fft=g['n_fft'], hop=g['hop'],
               dim_f=g['dim_f'], dim_t=dim_t, compensate=g['compensate'], overlap=0.25, denoise=denoise,
               primary='vocals', secondary='instrumental', reference='audio-separator 0.47.1 MDXSeparator.separate',
               primary_is='network stem, not scaled by compensate (audio-separator since its change #203)',
               secondary_is='input - compensate * primary')
