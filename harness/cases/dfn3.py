"""DeepFilterNet3: DeepFilterNet's own ``df.enhance.enhance`` on a seeded-random-weight DFN3 and its ONNX export.

The model is built by the authors' code path (``df.enhance.init_df`` on a model folder holding a config.ini, no
checkpoint), with the published DeepFilterNet3 config.ini values at ``--size full`` (see ``_dfn3_config.py``) and the
same feature pipeline with small hidden sizes at ``--size small``. Parameters are seeded (``_dfn3_config.seed_weights``).
The three graphs Soundry runs are written by the authors' ``df.scripts.export.export`` (enc.onnx, erb_dec.onnx,
df_dec.onnx with their input/output names, dynamic axes and opset 14, and their own onnxruntime check against the
torch outputs), with two changes for torch 2.13, made only for the duration of their call: ``torch.onnx.export``
defaults to the dynamo exporter there, which needs onnxscript (not installed) and which their script predates, so
``dynamo=False`` is passed (the TorchScript-based exporter they used); and ``torch.jit.script`` of their Encoder and
ErbDecoder fails in torch 2.13 ("Unsupported value kind: Tensor"; every submodule scripts alone), so it returns the
module unchanged and the exporter traces it, as it does for their df_dec (jit=False in their script). Neither network
has data-dependent control flow, and the TS comparison runs the graphs at a frame count other than the export's, so a
shape baked in by tracing would show. onnxsim is not installed, so their ``simplify`` step is off (it folds
constants; the published files were simplified). They are packed with
config.ini into ``DeepFilterNet3_onnx.tar.gz`` laid out as the published archive (``tmp/export/<file>``, as their
export script's ``main`` writes it when run with export dir /tmp/export).

The reference is ``enhance(model, df_state, audio)`` with its defaults (pad=True: delay compensation), once more
with ``atten_lim_db=12`` and once with the post-filter on (what ``init_df(post_filter=True)``/``--pf`` sets).
``df_features`` is wrapped to record what libdf (deepfilterlib) computed for the padded input, so a feature mismatch is
found apart from the network.

What the golden holds:
- ``input``: the 48 kHz mono signal [1, N] (speech-like: voiced harmonic segments with moving formants, fricative
  noise bursts, pauses, a noise floor);
- ``output.enhanced``, ``output.enhanced_atten12``, ``output.enhanced_pf``: enhance()'s outputs [1, N];
- ``net.feat_erb`` [T, nb_erb], ``net.feat_spec`` [T, nb_df, 2]: libdf's ERB and unit-norm complex features;
  at full size also ``net.spec`` [T, F, 2], libdf's analysis.
"""
from __future__ import annotations

import contextlib
import gzip
import math
import pathlib
import sys
import tarfile

import numpy as np
import torch

from common import seed, write_case, write_golden

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _dfn3_config import CONFIGS, SAMPLE_RATE, config_ini, seed_weights  # noqa: E402

# After common, which imports reference_imports' torchaudio stand-in. The package's __init__ rebinds `df.enhance` to
# the function, so the module is taken from sys.modules.
import df.enhance  # noqa: E402
from df.scripts import export as df_export  # noqa: E402

df_enhance = sys.modules['df.enhance']

SECONDS = {'small': 0.5, 'full': 4.0}


def speech_like(seconds: float, sample_rate: int, seed_value: int) -> np.ndarray:
    """Deterministic speech-like test signal, float32 [1, N], peak 0.5.

    Voiced stretches (a glottal-pulse-like harmonic series on a wandering f0, shaped by three moving formant
    resonances), unvoiced bursts of high-passed noise, short pauses, and a low broadband noise floor, so every ERB band
    and both the masked and the deep-filtered bins see changing content, silence and noise."""
    rng = np.random.default_rng(seed_value)
    n = int(round(seconds * sample_rate))
    t = np.arange(n) / sample_rate
    out = np.zeros(n)
    at = 0
    while at < n:
        kind = rng.choice(['voiced', 'unvoiced', 'pause'], p=[0.6, 0.25, 0.15])
        length = int(rng.uniform(0.06, 0.3) * sample_rate)
        seg = slice(at, min(n, at + length))
        m = seg.stop - seg.start
        if kind == 'voiced':
            f0 = rng.uniform(90, 240) * (1 + 0.1 * np.sin(2 * math.pi * rng.uniform(2, 6) * t[seg]))
            phase = 2 * math.pi * np.cumsum(f0) / sample_rate
            formants = rng.uniform([300, 900, 2200], [900, 2200, 3500])
            sig = np.zeros(m)
            for k in range(1, 60):
                fk = k * f0
                amp = sum(np.exp(-((fk - fm) / 150.0) ** 2) for fm in formants) + 0.02
                sig += amp * np.sin(k * phase) * (fk < sample_rate / 2)
        elif kind == 'unvoiced':
            sig = np.diff(rng.standard_normal(m + 1)) * 0.3
        else:
            sig = np.zeros(m)
        env = np.minimum(1.0, np.minimum(np.arange(m), np.arange(m)[::-1]) / (0.01 * sample_rate))
        out[seg] += sig * env
        at += length
    out /= max(float(np.max(np.abs(out))), 1e-9)
    out += 0.03 * rng.standard_normal(n)
    out *= 0.5 / float(np.max(np.abs(out)))
    return out[None, :].astype(np.float32)


@contextlib.contextmanager
def torchscript_onnx_exporter():
    """While the authors' export runs: torch.onnx.export with dynamo=False, and torch.jit.script returning the module
    unchanged (see the module docstring), so export_impl traces the eager module with its own names, axes and opset."""
    original_export, original_script = torch.onnx.export, torch.jit.script

    def export(*args, **kwargs):
        kwargs.setdefault('dynamo', False)
        return original_export(*args, **kwargs)

    def script(module, *_args, **_kwargs):
        return module

    torch.onnx.export, torch.jit.script = export, script
    try:
        yield
    finally:
        torch.onnx.export, torch.jit.script = original_export, original_script


def _pack(export_dir: pathlib.Path, archive: pathlib.Path) -> None:
    # The published archive's members are tmp/export/<file> (their main() adds os.path.join('/tmp/export', file));
    # a fixed mtime and owner keep reruns byte-identical.
    with open(archive, 'wb') as raw, gzip.GzipFile(fileobj=raw, mode='wb', compresslevel=9, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode='w') as tar:
        for name in ('enc.onnx', 'erb_dec.onnx', 'df_dec.onnx', 'config.ini'):
            info = tar.gettarinfo(str(export_dir / name), arcname=f'tmp/export/{name}')
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, '', ''
            with open(export_dir / name, 'rb') as f:
                tar.addfile(info, f)


def generate(out_dir: pathlib.Path, size: str) -> None:
    seed(28)
    cfg = CONFIGS[size]
    model_dir = out_dir / 'model'
    model_dir.mkdir()
    (model_dir / 'config.ini').write_text(config_ini(cfg))
    model, df_state, _ = df_enhance.init_df(str(model_dir), post_filter=False, log_level='NONE', log_file=None,
                                            config_allow_defaults=True, epoch='none')
    model = model.to('cpu').eval()
    seed_weights(model, seed_value=2801)

    export_dir = out_dir / 'export'
    export_dir.mkdir()
    with torchscript_onnx_exporter():
        df_export.export(model, str(export_dir), df_state=df_state, check=True, simplify=False)
    (export_dir / 'config.ini').write_text((model_dir / 'config.ini').read_text())
    archive = out_dir / 'DeepFilterNet3_onnx.tar.gz'
    _pack(export_dir, archive)

    audio = torch.from_numpy(speech_like(SECONDS[size], SAMPLE_RATE, seed_value=2802))
    recorded: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    features = df_enhance.df_features

    def recording_features(*args, **kwargs):
        result = features(*args, **kwargs)
        recorded.append(tuple(x.detach().clone() for x in result))
        return result

    df_enhance.df_features = recording_features
    try:
        enhanced = df_enhance.enhance(model, df_state, audio.clone())
        enhanced_atten = df_enhance.enhance(model, df_state, audio.clone(), atten_lim_db=12)
        model.post_filter = True
        enhanced_pf = df_enhance.enhance(model, df_state, audio.clone())
        model.post_filter = False
    finally:
        df_enhance.df_features = features
    spec, feat_erb, feat_spec = recorded[0]
    for other in recorded[1:]:
        if not all(torch.equal(a, b) for a, b in zip(recorded[0], other)):
            raise RuntimeError('df_features gave different features for the same input')

    net = {'feat_erb': feat_erb[0, 0], 'feat_spec': feat_spec[0, 0]}
    if size == 'full':
        net['spec'] = spec[0, 0]
    write_golden(out_dir, audio, {'enhanced': enhanced, 'enhanced_atten12': enhanced_atten, 'enhanced_pf': enhanced_pf},
                 net)
    # Only the archive travels: the loose export and model folders are what it was packed from.
    for folder in (export_dir, model_dir):
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()
    write_case(out_dir, 'dfn3', archive=archive.name, sample_rate=SAMPLE_RATE, frames=int(feat_erb.shape[2]),
               atten_lim_db=12, post_filter_beta=cfg['pf_beta'], size=size,
               reference='deepfilternet 0.5.6 df.enhance.enhance (pad=True), deepfilterlib 0.5.6 features',
               export='df.scripts.export.export (TorchScript exporter, simplify off)')
