"""Checkpoint reader case: small files written by torch.save and safetensors themselves, in every layout Soundry reads.

Soundry's checkpoint reader (src/models/checkpoint/) must give back, through byte ranges into these files, exactly the
values torch holds. Each file here is a layout the authors' own files use:

- plain.pt: a state dict of every dtype (fp32, fp16, bf16, fp64, int64, int32, uint8, bool), a 0-d tensor, an empty
  one, an nn.Parameter, three views of one shared storage at different offsets, and a tensor whose size-1 dimension has
  a stride no row-major layout would give it;
- protocol4.pt: the same written with pickle protocol 4 (FRAME, MEMOIZE, STACK_GLOBAL, SHORT_BINUNICODE);
- demucs.th: a package as demucs.states.serialize_model writes it (klass, args, kwargs with a Fraction, fp16 state,
  training_args), for a tiny HTDemucs, with objects added to training_args as older training scripts leave there (an
  omegaconf DictConfig, an argparse.Namespace, a path, a datetime, a Counter, bytes);
- lightning.ckpt: a PyTorch Lightning checkpoint ({'state_dict': ..., 'epoch': 3, optimizer states keyed by ints,
  hyper-parameters as a DictConfig, a numpy scalar in a callback's state});
- legacy.pt, legacy4.pt: the pre-1.6 format (torch.save(..., _use_new_zipfile_serialization=False)), with a view, in
  pickle protocols 2 and 4;
- weights.safetensors: safetensors.torch.save_file with metadata;
- noncontig.pt: a transposed tensor, which Soundry must refuse (it cannot be one byte range).

golden.safetensors holds every tensor's values as float32 under `output.<file>:<key>`; case.json lists each file's
format and tensors (key, dtype, shape) and the refusals. test/engines/reference/checkpoints.ts compares.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import fractions
import pathlib

import numpy as np
import torch
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import save_file as save_torch

from common import seed, write_case

DTYPES = {
    torch.float32: 'float32', torch.float16: 'float16', torch.bfloat16: 'bfloat16', torch.float64: 'float64',
    torch.int64: 'int64', torch.int32: 'int32', torch.int16: 'int16', torch.int8: 'int8', torch.uint8: 'uint8',
    torch.bool: 'bool',
}


def plain_state() -> 'collections.OrderedDict[str, torch.Tensor]':
    base = torch.randn(20)
    odd = torch.randn(4, 2).t()[:, 0:1]  # shape [2, 1], strides (1, 2): contiguous, though not torch's default strides
    assert odd.is_contiguous() and odd.stride() == (1, 2)
    return collections.OrderedDict([
        ('f32', torch.randn(3, 4)),
        ('f16', torch.randn(2, 3).half()),
        ('bf16', torch.randn(5).bfloat16()),
        ('f64', torch.randn(2, 2).double()),
        ('i64', torch.tensor([[0, 5, 9], [-3, 1 << 40, 7]], dtype=torch.int64)),
        ('i32', torch.tensor([1, -2, 3], dtype=torch.int32)),
        ('u8', torch.tensor([0, 128, 255], dtype=torch.uint8)),
        ('bool', torch.tensor([True, False, True])),
        ('scalar', torch.tensor(3.5)),
        ('empty', torch.zeros(0, 3)),
        ('param', torch.nn.Parameter(torch.randn(4))),
        ('view.whole', base),
        ('view.middle', base[2:8].view(2, 3)),
        ('view.tail', base[14:18]),
        ('odd_stride', odd),
    ])


def demucs_package() -> dict:
    from demucs.htdemucs import HTDemucs
    from demucs.states import serialize_model
    from omegaconf import OmegaConf

    model = HTDemucs(sources=['drums', 'bass', 'other', 'vocals'], audio_channels=2, channels=8, growth=2, depth=2,
                     nfft=256, t_layers=1, t_heads=2, bottom_channels=0, segment=fractions.Fraction(39, 5),
                     samplerate=44100)
    training = OmegaConf.create({'dset': {'segment': 11}, 'optim': {'lr': 3e-4}, 'seed': 42})
    package = serialize_model(model, training, half=True)
    # Older demucs files keep objects of demucs' (or omegaconf's) classes here; Soundry never reads this key.
    package['training_args']['inert'] = {
        'cfg': OmegaConf.create({'x': [1, 2]}), 'ns': argparse.Namespace(a=1), 'path': pathlib.PurePosixPath('/data/musdb'),
        'when': datetime.datetime(2022, 11, 3, 12, 30), 'counts': collections.Counter(drums=2), 'blob': b'\x00\xff',
    }
    return package


def lightning_checkpoint() -> dict:
    from omegaconf import OmegaConf

    state = collections.OrderedDict([
        ('model.band_split.0.weight', torch.randn(4, 6)),
        ('model.band_split.0.bias', torch.randn(4)),
        ('model.freq_indices', torch.tensor([0, 1, 1, 2, 3, 5], dtype=torch.int64)),
    ])
    return {
        'epoch': 3,
        'global_step': 1200,
        'pytorch-lightning_version': '2.1.3',
        'state_dict': state,
        'optimizer_states': [{
            'state': {0: {'step': torch.tensor(5.0), 'exp_avg': torch.randn(4, 6)}},
            'param_groups': [{'lr': 1e-3, 'betas': (0.9, 0.999), 'params': [0, 1, 2]}],
        }],
        'lr_schedulers': [],
        'callbacks': {"ModelCheckpoint{'monitor': 'sdr'}": {'best_model_score': torch.tensor(9.5),
                                                            'last_score': np.float64(9.25)}},
        'hyper_parameters': OmegaConf.create({'dim': 8, 'depth': 1}),
    }


def legacy_state() -> dict:
    base = torch.arange(12, dtype=torch.float32) / 4
    return {'w': torch.randn(3, 2).half(), 'base': base, 'view': base[3:9].view(3, 2), 'idx': torch.arange(5)}


def describe(state) -> list[dict]:
    return [{'key': k, 'dtype': DTYPES[v.dtype], 'shape': list(v.shape)} for k, v in state.items()]


def generate(out_dir: pathlib.Path, size: str) -> None:
    # One set of files for both sizes: the reader's work does not grow with a model's configuration.
    del size
    seed(27)
    out_dir = pathlib.Path(out_dir)
    golden: dict[str, np.ndarray] = {}
    files: dict[str, dict] = {}

    def record(name: str, fmt: str, state, **extra) -> None:
        for k, v in state.items():
            golden[f'output.{name}:{k}'] = np.ascontiguousarray(v.detach().to(torch.float64).numpy().astype(np.float32))
        files[name] = {'format': fmt, 'tensors': describe(state), **extra}

    plain = plain_state()
    torch.save(plain, out_dir / 'plain.pt')
    record('plain.pt', 'torch-zip', plain)
    torch.save(plain, out_dir / 'protocol4.pt', pickle_protocol=4)
    record('protocol4.pt', 'torch-zip', plain)

    package = demucs_package()
    torch.save(package, out_dir / 'demucs.th')
    record('demucs.th', 'torch-zip', package['state'],
           klass=f"{package['klass'].__module__}.{package['klass'].__name__}",
           kwargs={k: (float(v) if isinstance(v, fractions.Fraction) else v) for k, v in package['kwargs'].items()})

    lightning = lightning_checkpoint()
    torch.save(lightning, out_dir / 'lightning.ckpt')
    record('lightning.ckpt', 'torch-zip', lightning['state_dict'], epoch=lightning['epoch'])

    legacy = legacy_state()
    torch.save(legacy, out_dir / 'legacy.pt', _use_new_zipfile_serialization=False)
    record('legacy.pt', 'torch-legacy', legacy)
    torch.save(legacy, out_dir / 'legacy4.pt', _use_new_zipfile_serialization=False, pickle_protocol=4)
    record('legacy4.pt', 'torch-legacy', legacy)

    weights = collections.OrderedDict([('a.weight', torch.randn(3, 3)), ('a.half', torch.randn(4).half()),
                                       ('a.bf16', torch.randn(2, 2).bfloat16())])
    save_torch(weights, str(out_dir / 'weights.safetensors'), metadata={'format': 'pt', 'note': 'checkpoint case'})
    record('weights.safetensors', 'safetensors', weights)

    torch.save({'t': torch.randn(3, 4).t()}, out_dir / 'noncontig.pt')

    save_numpy(dict(sorted(golden.items())), str(out_dir / 'golden.safetensors'))
    write_case(out_dir, 'checkpoints', files=files,
               refused=[{'file': 'noncontig.pt', 'message': 'not contiguous row-major'}])

