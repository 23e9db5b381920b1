"""Peak memory of python-audio-separator's own MDX-Net separation on a song, to set beside Soundry's.

A public measurement of the real Kim_Vocal_2 on ONNX Runtime CPU (through audio-separator) reports 5.6-12 GB peak
for a song. The real weights are not here, so this runs a Kim_Vocal_2-size model with random weights (by default
Soundry's real-size stand-in, the very file bench/separation-cost.ts measures: n_fft 7680, dim_f 3072, dim_t 256,
the TFC-TDF layout with the real parameter count) through MDXSeparator exactly as harness/cases/mdx.py drives it
(the parameters audio_separator.separator.Separator passes, its MDX defaults: segment_size 256 = dim_t, overlap
0.25, batch_size 1, hop 1024, no denoise; the onnxruntime session as MDXSeparator opens it: default SessionOptions,
so the CPU memory arena and memory patterns are on) and ``separate()`` on a float WAV of the song, stems written as
WAV files the way it writes them.

    harness/.venv/bin/python harness/mdx_memory.py [--model PATH] [--seconds 180] [--song PATH] [--intra-threads N]
    harness/.venv/bin/python harness/mdx_memory.py --session-only 3 [--arena-off]
        the network alone: the session opened as MDXSeparator opens it (or with the arena and memory patterns off, as
        Soundry opens it), run that many times on one [1, 4, 3072, 256] input, VmHWM after each run.

Prints one JSON line: VmHWM (peak RSS) after loading the model, after reading the song, after each demix call and
at the end, ru_maxrss, wall time and the number of model runs. The weights are noise, so only cost is meaningful.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import shutil
import sys
import tempfile
import time

import numpy as np
import soundfile as sf
import torch

import reference_imports  # noqa: F401  (before audio_separator)
from cases.mdx import GEOMETRY, _separator

HERE = pathlib.Path(__file__).resolve().parent
SONG = HERE.parent.parent / 'shared' / 'corpus' / 'separation' / 'mixture_only_real_songs' / 'demucs_test.mp3'
MODEL = pathlib.Path('/tmp/soundry-separation-cost/Kim_Vocal_2/Kim_Vocal_2.onnx')


def vm_hwm_mb() -> float:
    for line in pathlib.Path('/proc/self/status').read_text().splitlines():
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) / 1024
    raise RuntimeError('no VmHWM')


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', type=pathlib.Path, default=MODEL)
    ap.add_argument('--seconds', type=float, default=180.0)
    ap.add_argument('--song', type=pathlib.Path, default=SONG)
    ap.add_argument('--intra-threads', type=int, default=0, help='0: onnxruntime default, as MDXSeparator leaves it')
    ap.add_argument('--session-only', type=int, default=0)
    ap.add_argument('--arena-off', action='store_true')
    args = ap.parse_args()
    if args.session_only:
        session_only(args.model, args.session_only, args.arena_off)
        return
    # audio-separator writes stems through pydub, which runs ffmpeg: without one on PATH, the one Soundry's npm
    # dependencies install.
    bundled = HERE.parent / 'node_modules' / '@ffmpeg-installer' / 'linux-x64'
    if not shutil.which('ffmpeg') and (bundled / 'ffmpeg').exists():
        os.environ['PATH'] = f"{bundled}{os.pathsep}{os.environ.get('PATH', '')}"
    marks: dict[str, float] = {'start': vm_hwm_mb()}

    # The song looped to the length asked, written as the float WAV separate() reads (as in bench/separation-cost.ts).
    loop, rate = sf.read(str(args.song), dtype='float32', always_2d=True)
    if rate != 44100 or loop.shape[1] != 2:
        raise SystemExit(f'{args.song}: want 44.1 kHz stereo, got {rate} Hz x {loop.shape[1]}')
    n = int(round(args.seconds * rate))
    song = np.resize(loop, (n, 2)) if n > len(loop) else loop[:n]
    work = pathlib.Path(tempfile.mkdtemp(prefix='mdx_memory_'))
    wav = work / 'song.wav'
    sf.write(str(wav), song, rate, subtype='FLOAT')
    del song, loop
    marks['song_written'] = vm_hwm_mb()

    if args.intra_threads:
        import onnxruntime as ort
        real = ort.SessionOptions

        def options():
            o = real()
            o.intra_op_num_threads = args.intra_threads
            return o
        ort.SessionOptions = options  # MDXSeparator builds its own SessionOptions(); only the thread count changes
    g = GEOMETRY['full']  # Kim_Vocal_2: n_fft 7680, hop 1024, dim_f 3072, dim_t 2**8, compensate 1.009
    t0 = time.monotonic()
    sep = _separator(args.model, work, g)
    marks['model_loaded'] = vm_hwm_mb()
    runs = {'model': 0}
    model_run = sep.model_run

    def counted(spek):
        runs['model'] += 1
        return model_run(spek)
    sep.model_run = counted
    demix = sep.demix
    calls: list[str] = []

    def marked(m, is_match_mix=False):
        out = demix(m, is_match_mix=is_match_mix)
        calls.append('match_mix' if is_match_mix else 'model')
        marks[f'after_demix_{len(calls)}_{calls[-1]}'] = vm_hwm_mb()
        return out
    sep.demix = marked
    with torch.no_grad():
        files = sep.separate(str(wav))
    wall = time.monotonic() - t0
    marks['end'] = vm_hwm_mb()
    for f in files:
        p = pathlib.Path(f) if pathlib.Path(f).is_absolute() else work / f
        p.unlink(missing_ok=True)
    wav.unlink()
    print(json.dumps({
        'model': str(args.model), 'model_bytes': args.model.stat().st_size, 'seconds': args.seconds,
        'settings': {'segment_size': 2 ** g['dim_t_log2'], 'overlap': 0.25, 'batch_size': 1, 'hop': g['hop'],
                     'n_fft': g['n_fft'], 'dim_f': g['dim_f'], 'enable_denoise': False,
                     'session_options': 'onnxruntime defaults (arena on, mem pattern on)',
                     'intra_op_threads': args.intra_threads or 'default'},
        'wall_s': round(wall, 1), 'model_runs': runs['model'], 'demix_calls': calls,
        'vm_hwm_mb': {k: round(v) for k, v in marks.items()},
        'ru_maxrss_mb': round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        'python': sys.version.split()[0],
    }))


def session_only(model: pathlib.Path, runs: int, arena_off: bool) -> None:
    import onnxruntime as ort
    so = ort.SessionOptions()  # MDXSeparator's: defaults, only the log level set
    if arena_off:
        so.enable_cpu_mem_arena = False
        so.enable_mem_pattern = False
    s = ort.InferenceSession(str(model), providers=['CPUExecutionProvider'], sess_options=so)
    g = GEOMETRY['full']
    x = (np.random.default_rng(27).standard_normal([1, 4, g['dim_f'], 2 ** g['dim_t_log2']]) * 0.1).astype(np.float32)
    marks = {'created': round(vm_hwm_mb())}
    for k in range(runs):
        t0 = time.monotonic()
        s.run(None, {'input': x})
        marks[f'run{k + 1}'] = round(vm_hwm_mb())
        marks[f'run{k + 1}_s'] = round(time.monotonic() - t0, 1)
    print(json.dumps({'model': str(model), 'arena_and_patterns': not arena_off, 'vm_hwm_mb': marks}))


if __name__ == '__main__':
    main()
