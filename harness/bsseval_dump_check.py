"""Scores a separation-quality bench dump with museval itself and compares it with Soundry's figures.

  npm run bench -- separation-quality --dump /tmp/sq-dump [--all-metrics] [other options]
  harness/.venv/bin/python harness/bsseval_dump_check.py /tmp/sq-dump

For every group the bench scored, the dump holds the references and the engine's estimates as museval takes them
([sources, samples, channels] float32) and the track medians Soundry computed. Here museval.evaluate (v4, the
window and hop the bench used) scores the same arrays, TrackStore aggregates them as for MUSDB18, and every median is
compared. Exits 1 when any differs by more than 1e-3 dB (museval stores values to 1e-5).
"""
from __future__ import annotations

import json
import math
import pathlib
import sys

import numpy as np

HARNESS = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HARNESS), str(HARNESS / 'cases')]
from bsseval import _import_museval  # noqa: E402  (puts ffmpeg on PATH for musdb's stempeg, then imports museval)

TOLERANCE_DB = 1e-3


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    museval = _import_museval()
    worst = 0.0
    files = sorted(pathlib.Path(sys.argv[1]).glob('*.json'))
    if not files:
        print(f'no *.json in {sys.argv[1]}', file=sys.stderr)
        return 2
    for meta_path in files:
        meta = json.loads(meta_path.read_text())
        shape = (len(meta['stems']), meta['samples'], meta['channels'])
        base = str(meta_path)[: -len('.json')]
        refs = np.fromfile(base + '.ref.f32', dtype='<f4').reshape(shape).astype(np.float64)
        ests = np.fromfile(base + '.est.f32', dtype='<f4').reshape(shape).astype(np.float64)
        sdr, isr, sir, sar = museval.evaluate(refs, ests, win=meta['window'], hop=meta['hop'], mode='v4')
        store = museval.TrackStore(win=1, hop=1, track_name=meta_path.stem)
        for j, stem in enumerate(meta['stems']):
            store.add_target(target_name=stem, values={'SDR': sdr[j].tolist(), 'ISR': isr[j].tolist(), 'SIR': sir[j].tolist(), 'SAR': sar[j].tolist()})
        for j, target in enumerate(store.scores['targets']):
            line = [f'{meta_path.stem} {target["name"]}:']
            for metric in ('SDR', 'ISR', 'SIR', 'SAR'):
                ours = meta.get(metric.lower())
                if ours is None:
                    continue
                ref = float(store.frames_agg([float(f['metrics'][metric]) for f in target['frames']]))
                got = ours[j] if ours[j] is not None else math.nan
                diff = 0.0 if (math.isnan(ref) and math.isnan(got)) else abs(ref - got)
                worst = max(worst, diff if not math.isnan(diff) else math.inf)
                line.append(f'{metric} museval {ref:.5f} soundry {got:.5f} (diff {diff:.1e})')
            print(' '.join(line))
    print(f'worst difference {worst:.2e} dB over {len(files)} groups (tolerance {TOLERANCE_DB} dB)')
    return 0 if worst <= TOLERANCE_DB else 1


if __name__ == '__main__':
    sys.exit(main())
