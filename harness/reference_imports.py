"""Imports the reference implementations the harness runs.

demucs' hybrid models import `openunmix.filtering.wiener`; openunmix's package __init__ also imports its data
utilities, which need torchaudio, for which no build matches torch 2.13. The package is registered here without
running that __init__, so `openunmix.filtering` (plain torch) loads from the installed package unchanged.
"""
import importlib.util
import sys
import types


def _openunmix_without_torchaudio() -> None:
    if 'openunmix' in sys.modules:
        return
    spec = importlib.util.find_spec('openunmix')
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError('openunmix is not installed: run harness/setup.sh')
    pkg = types.ModuleType('openunmix')
    pkg.__path__ = list(spec.submodule_search_locations)
    sys.modules['openunmix'] = pkg


_openunmix_without_torchaudio()


def _onnx2torch_unused() -> None:
    """audio-separator's MDX module imports onnx2torch (which needs torchvision, not buildable against torch 2.13)
    only to convert a model to torch when the segment size differs from the model's dim_t; the harness always runs
    MDX models through ONNX Runtime at their own dim_t, so a module that fails loudly if ever called stands in."""
    if 'onnx2torch' in sys.modules:
        return
    stub = types.ModuleType('onnx2torch')

    def convert(*_args, **_kwargs):
        raise RuntimeError('onnx2torch is not installed in the harness: run MDX models at their own dim_t')

    stub.convert = convert
    sys.modules['onnx2torch'] = stub


_onnx2torch_unused()


def _torchaudio_for_df_io() -> None:
    """DeepFilterNet's `df.enhance` imports `df.io`, which imports torchaudio (no build matches torch 2.13) for its
    file reading, writing and resampling. The harness hands `enhance()` tensors and never calls those, so a package
    whose every function fails loudly stands in, with the one name df.io imports at load
    (`torchaudio.backend.common.AudioMetaData`). Only registered when torchaudio is really absent."""
    if 'torchaudio' in sys.modules or importlib.util.find_spec('torchaudio') is not None:
        return

    def unavailable(*_args, **_kwargs):
        raise RuntimeError('torchaudio is not installed in the harness: hand DeepFilterNet tensors, not files')

    ta = types.ModuleType('torchaudio')
    ta.__path__ = []
    for name in ('load', 'save', 'info'):
        setattr(ta, name, unavailable)
    backend = types.ModuleType('torchaudio.backend')
    backend.__path__ = []
    common = types.ModuleType('torchaudio.backend.common')

    class AudioMetaData:  # a name for df.io's annotations; never built here
        def __init__(self, *_args, **_kwargs):
            unavailable()

    common.AudioMetaData = AudioMetaData
    functional = types.ModuleType('torchaudio.functional')
    functional.resample = unavailable
    ta.backend, backend.common, ta.functional = backend, common, functional
    sys.modules.update({'torchaudio': ta, 'torchaudio.backend': backend, 'torchaudio.backend.common': common,
                        'torchaudio.functional': functional})


_torchaudio_for_df_io()
