"""HTDemucs (4 sources) on seeded random weights, saved as Meta saves it and as the author's safetensors copy.

``generate(out_dir, size)`` builds ``demucs.htdemucs.HTDemucs`` at the real htdemucs configuration (size 'full': the
kwargs stored in Meta's 955717e8 package) or a small one of the same structure (size 'small': both branches, four
encoder/decoder levels, DConv branches, frequency embedding, the cross-transformer with its sin embeddings and
channel up/down-samplers), fills every parameter with seeded noise sized so that activations stay O(1) and every
branch matters (LayerScales, norms and biases included), and writes:

- ``<name>-<sha256[:8]>.th``: ``demucs.states.serialize_model(model, training_args, half=True)`` saved with
  ``save_with_checksum``, i.e. the package Meta's ``.th`` files hold ({klass, args, kwargs, state (fp16),
  training_args}) under a name whose suffix demucs checks;
- ``<name>.safetensors``: the layout of the author's Hugging Face copies (adefossez/demucs tools/export_hf.py):
  the fp16 state dict as tensors, and metadata ``klass`` ("demucs.htdemucs.HTDemucs"), ``args`` and ``kwargs`` as
  JSON, a Fraction written as {"_type": "fraction", "numerator": n, "denominator": d};
- ``golden.safetensors``: ``input`` (the mixture), ``output.<stem>`` = ``apply_model(model, mix, shifts=0,
  split=True, overlap=0.25)`` with the model loaded back from the ``.th`` (so the reference runs on the same
  fp16-rounded weights Soundry reads), and one network pass on the first segment: ``net.input`` [2, L],
  ``net.output`` [S, 2, L], ``net.freq`` [S, 4, F, T] (the frequency branch's complex-as-channels spectrogram
  before the iSTFT) and ``net.time`` [S, 2, L] (the time branch), the two outputs of Soundry's graph; for the
  4-source case also ``net.shifts1.<stem>``: ``apply_model(..., shifts=1)`` with Python's ``random`` seeded, whose
  one draw (``shiftOffset`` in case.json) Soundry's fixed shift reproduces (0.5 s - offset zeros in front);
- ``case.json``.

demucs/separate.py normalises the mix by its mean and std around apply_model; that happens outside the stage in
Soundry (and is not part of what is compared), so the golden is apply_model itself.
"""
from __future__ import annotations

import json
import pathlib
import random
from fractions import Fraction

import torch
from torch import nn

from common import mixture, seed, write_case, write_golden

import reference_imports  # noqa: F401  (before demucs)
from demucs.apply import apply_model  # noqa: E402
from demucs.htdemucs import HTDemucs  # noqa: E402
from demucs.states import load_model, save_with_checksum, serialize_model  # noqa: E402

SOURCES_4 = ['drums', 'bass', 'other', 'vocals']
SOURCES_6 = SOURCES_4 + ['guitar', 'piano']

# The constructor kwargs of Meta's htdemucs package (955717e8-8726e21a.th; the same in the author's
# 955717e8.safetensors metadata), in the order demucs' training code passes them.
FULL_4S = {
    'sources': SOURCES_4, 'audio_channels': 2, 'samplerate': 44100, 'segment': Fraction(39, 5),
    'channels': 48, 'channels_time': None, 'growth': 2, 'nfft': 4096, 'wiener_iters': 0, 'end_iters': 0,
    'wiener_residual': False, 'cac': True, 'depth': 4, 'rewrite': True, 'multi_freqs': [], 'multi_freqs_depth': 3,
    'freq_emb': 0.2, 'emb_scale': 10, 'emb_smooth': True, 'kernel_size': 8, 'stride': 4, 'time_stride': 2,
    'context': 1, 'context_enc': 0, 'norm_starts': 4, 'norm_groups': 4, 'dconv_mode': 3, 'dconv_depth': 2,
    'dconv_comp': 8, 'dconv_init': 0.001, 'bottom_channels': 512, 't_layers': 5, 't_emb': 'sin',
    't_hidden_scale': 4.0, 't_heads': 8, 't_dropout': 0.02, 't_max_positions': 10000, 't_norm_in': True,
    't_norm_in_group': False, 't_group_norm': False, 't_norm_first': True, 't_norm_out': True,
    't_max_period': 10000.0, 't_weight_decay': 0.0, 't_lr': None, 't_layer_scale': True, 't_gelu': True,
    't_weight_pos_embed': 1.0, 't_sin_random_shift': 0, 't_cape_mean_normalize': True, 't_cape_augment': True,
    't_cape_glob_loc_scale': [5000.0, 1.0, 1.4], 't_sparse_self_attn': False, 't_sparse_cross_attn': False,
    't_mask_type': 'diag', 't_mask_random_seed': 42, 't_sparse_attn_window': 400, 't_global_window': 100,
    't_sparsity': 0.95, 't_auto_sparsity': False, 't_cross_first': False, 'rescale': 0.1,
}
# htdemucs_6s (5c90dfd2): the same network without the 512-channel bottom around the transformer (it runs at 384
# channels; Meta's file is 55 MB against 84 MB), six sources.
FULL_6S = {**FULL_4S, 'sources': SOURCES_6, 'bottom_channels': 0, 't_dropout': 0.0}

# Small configurations of the same structure: nfft 2048 (1024 bins -> 256 -> 64 -> 16 -> 4 at the bottom; 512 would
# reach a single frequency row, the 'last_freq' layout no released model has), 4 channels doubling to 32, 0.1 s
# segments. The 4-source one keeps the bottom channels (up/down-samplers around a
# 16-channel transformer); the 6-source one runs the transformer at 32 channels and turns on the encoder/decoder
# GroupNorms from level 2 (the real models have norm_starts=depth, so no level uses them) to exercise that path.
SMALL = {'channels': 4, 'nfft': 2048, 'dconv_comp': 4, 'segment': Fraction(1, 10)}
SMALL_4S = {**FULL_4S, **SMALL, 'bottom_channels': 16, 't_heads': 4}
SMALL_6S = {**FULL_6S, **SMALL, 't_heads': 8, 't_hidden_scale': 2.0, 'norm_starts': 2}

VARIANTS = {
    ('htdemucs', 'small'): SMALL_4S, ('htdemucs', 'full'): FULL_4S,
    ('htdemucs_6s', 'small'): SMALL_6S, ('htdemucs_6s', 'full'): FULL_6S,
}
# Mixture lengths in segments: several chunks with a short last one, so the overlap weights, the symmetric padding
# of a short chunk with its real neighbours and the tail all matter.
MIX_SEGMENTS = {'small': 2.31, 'full': 1.93}
SHIFT_SEED = 2701


@torch.no_grad()
def randomise(model: nn.Module, seed_value: int) -> None:
    """Seeded weights that keep activations O(1) and make every path count: conv/linear weights ~ N(0, 1/fan_in),
    biases ~ N(0, 0.05), norm scales ~ 1 + N(0, 0.1), LayerScales ~ U(0.3, 0.7) (the trained init of 1e-3/1e-4
    would make the DConv and transformer branches invisible at a 1e-4 tolerance), the frequency embedding ~ N(0, 0.1).
    """
    gen = torch.Generator().manual_seed(seed_value)

    def normal(shape, std):
        return torch.randn(shape, generator=gen) * std

    for module in model.modules():
        if isinstance(module, (nn.Conv1d, nn.Conv2d, nn.Linear)):
            fan_in = module.weight[0].numel()
            module.weight.copy_(normal(module.weight.shape, fan_in ** -0.5))
        elif isinstance(module, (nn.ConvTranspose1d, nn.ConvTranspose2d)):
            # weight [in, out, k...]: each output sample sums in * k / stride inputs.
            taps = module.weight.shape[0] * module.weight[0, 0].numel() / module.stride[0]
            module.weight.copy_(normal(module.weight.shape, taps ** -0.5))
        elif isinstance(module, nn.MultiheadAttention):
            module.in_proj_weight.copy_(normal(module.in_proj_weight.shape, module.embed_dim ** -0.5))
            module.in_proj_bias.copy_(normal(module.in_proj_bias.shape, 0.05))
        elif isinstance(module, (nn.GroupNorm, nn.LayerNorm)):
            module.weight.copy_(1 + normal(module.weight.shape, 0.1))
            module.bias.copy_(normal(module.bias.shape, 0.05))
        elif isinstance(module, nn.Embedding):
            module.weight.copy_(normal(module.weight.shape, 0.1))
        if getattr(module, 'bias', None) is not None and not isinstance(module, (nn.GroupNorm, nn.LayerNorm)):
            if isinstance(module.bias, torch.Tensor) and module.bias.dim() == 1:
                module.bias.copy_(normal(module.bias.shape, 0.05))
    for name, p in model.named_parameters():
        if name.endswith('.scale'):  # LayerScale (DConv and transformer)
            p.copy_(0.3 + 0.4 * torch.rand(p.shape, generator=gen))


def _json_default(value):
    # The author's export encodes a Fraction as a tagged object and anything else json cannot hold as its str().
    if isinstance(value, Fraction):
        return {'_type': 'fraction', 'numerator': value.numerator, 'denominator': value.denominator}
    return str(value)


def save_safetensors(package: dict, path: pathlib.Path) -> None:
    from safetensors.torch import save_file
    klass = package['klass']
    metadata = {
        'klass': f'{klass.__module__}.{klass.__qualname__}',
        'args': json.dumps(package['args'], default=_json_default),
        'kwargs': json.dumps(package['kwargs'], default=_json_default),
    }
    save_file({k: v.contiguous() for k, v in package['state'].items()}, str(path), metadata=metadata)
    _canonical_metadata_order(path)


def _canonical_metadata_order(path: pathlib.Path) -> None:
    """safetensors writes ``__metadata__`` from a hash map, so its key order (not its content) changes from run to
    run; rewriting the header with the keys sorted (same length, so the data offsets hold) keeps reruns
    byte-identical."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], 'little')
    header = json.loads(raw[8:8 + n])
    header['__metadata__'] = dict(sorted(header['__metadata__'].items()))
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (n - len(text))
    if len(text) != n:
        raise RuntimeError(f'{path}: canonical header is {len(text)} bytes, not {n}')
    path.write_bytes(raw[:8] + text + raw[8 + n:])


def one_pass(model: HTDemucs, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """model(x) on one segment, with the frequency branch's spectrogram (complex as channels) and the time branch
    taken apart: the forward's iSTFT is wrapped to keep its input and output."""
    kept = {}
    ispec = model._ispec

    def spy(z, length=None, scale=0):
        kept['z'] = z
        kept['x'] = ispec(z, length, scale)
        return kept['x']

    model._ispec = spy
    try:
        out = model(x[None])[0]
    finally:
        del model._ispec
    z = kept['z'][0]  # [S, C, F, T] complex
    S, C, F, T = z.shape
    freq = torch.view_as_real(z).permute(0, 1, 4, 2, 3).reshape(S, C * 2, F, T)
    return {'input': x, 'output': out, 'freq': freq, 'time': out - kept['x'][0]}


def generate_variant(out_dir: pathlib.Path, size: str, name: str) -> None:
    seed(27)
    kwargs = VARIANTS[(name, size)]
    model = HTDemucs(**kwargs)
    randomise(model, 1000 + len(kwargs['sources']))
    training_args = {'model': 'htdemucs', 'note': 'seeded random weights for Soundry reference tests'}
    from omegaconf import OmegaConf
    package = serialize_model(model, OmegaConf.create(training_args), half=True)
    save_with_checksum(package, out_dir / f'{name}.th')
    th = next(out_dir.glob(f'{name}-*.th'))
    st = out_dir / f'{name}.safetensors'
    save_safetensors(package, st)

    # The reference runs on the weights as saved (fp16-rounded), loaded back the way demucs loads a package.
    loaded = load_model(torch.load(th, 'cpu', weights_only=False))
    loaded.eval()
    segment = int(loaded.segment * loaded.samplerate)
    mix = torch.from_numpy(mixture(MIX_SEGMENTS[size] * segment / loaded.samplerate, loaded.samplerate, 2700))
    shift = {}
    with torch.no_grad():
        stems = apply_model(loaded, mix[None], shifts=0, split=True, overlap=0.25)[0]
        net = one_pass(loaded, mix[:, :segment].contiguous())
        if name == 'htdemucs':
            # apply_model(shifts=1) draws random.randint(0, max_shift) once: seeding `random` fixes the draw, and
            # the same seed tells which it was.
            max_shift = int(0.5 * loaded.samplerate)
            random.seed(SHIFT_SEED)
            shift = {'shiftOffset': random.randint(0, max_shift), 'maxShift': max_shift}
            random.seed(SHIFT_SEED)
            shifted = apply_model(loaded, mix[None], shifts=1, split=True, overlap=0.25)[0]
            net.update({f'shifts1.{s}': shifted[i] for i, s in enumerate(loaded.sources)})
    write_golden(out_dir, mix, {s: stems[i] for i, s in enumerate(loaded.sources)}, net)
    write_case(
        out_dir, 'htdemucs',
        model=name, size=size, weights={'th': th.name, 'safetensors': st.name},
        sources=list(loaded.sources), sampleRate=loaded.samplerate, segment=segment,
        nFft=loaded.nfft, overlap=0.25, shifts=0, samples=int(mix.shape[-1]),
        reference='demucs.apply.apply_model(model, mix, shifts=0, split=True, overlap=0.25), demucs 4.0.1',
        **shift,
    )


def generate(out_dir: pathlib.Path, size: str) -> None:
    generate_variant(out_dir, size, 'htdemucs')


if __name__ == '__main__':
    import sys
    generate_variant(pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else 'htdemucs')
