/**
 * Enhancement and VAD models. Each entry's name is its folder under MODELS_DIR, the layout the engines
 * look for (onnx-denoise.ts: <dir>/dtln/model_{1,2}.onnx and <dir>/gtcrn/gtcrn.onnx; vad.ts:
 * <dir>/silero_vad/silero_vad.onnx). URLs point at the authors' repositories pinned to a commit, so the
 * sha256 and size below (measured on those files) stay valid; all three projects are MIT-licensed.
 */
import type { OtherModelEntry } from './catalog.js';

/** github.com/<repo>/raw/<commit>/<path> redirects to the file's bytes at that commit. */
function pinned(repo: string, commit: string, path: string): string {
  return `https://github.com/${repo}/raw/${commit}/${path}`;
}

const DTLN = { repo: 'breizhn/DTLN', commit: '1de1f15' };
const GTCRN = { repo: 'Xiaobin-Rong/gtcrn', commit: '3862c44' };
const SILERO = { repo: 'snakers4/silero-vad', commit: '806dcba' };

export const ENHANCE_MODELS: readonly OtherModelEntry[] = [
  {
    name: 'dtln',
    kind: 'enhance',
    description: 'DTLN dual-signal LSTM denoiser (16 kHz, two ONNX stages); best on additive noise, worst on reverberant input',
    license: 'MIT',
    meta: { engine: 'dtln', sampleRate: 16000, source: `github ${DTLN.repo}@${DTLN.commit}` },
    files: [
      {
        path: 'model_1.onnx',
        url: pinned(DTLN.repo, DTLN.commit, 'pretrained_model/model_1.onnx'),
        sizeBytes: 1458237,
        sha256: '22b91cae3855e5a0620e66a917ca6c82c58db0e842c770f58d86751c5e8d4ae3',
      },
      {
        path: 'model_2.onnx',
        url: pinned(DTLN.repo, DTLN.commit, 'pretrained_model/model_2.onnx'),
        sizeBytes: 2510010,
        sha256: 'e20c92f9233fccf29cddf86970d0d0161a03aebccc26d6f4d5639c4d5ec2e639',
      },
    ],
  },
  {
    name: 'gtcrn',
    kind: 'enhance',
    description: 'GTCRN streaming denoiser (16 kHz, DNS3-trained); robust on noisy and reverberant speech',
    license: 'MIT',
    meta: { engine: 'gtcrn', sampleRate: 16000, source: `github ${GTCRN.repo}@${GTCRN.commit}` },
    files: [
      {
        path: 'gtcrn.onnx',
        url: pinned(GTCRN.repo, GTCRN.commit, 'stream/onnx_models/gtcrn.onnx'),
        sizeBytes: 352084,
        sha256: 'f648b02f2d7ff96ebcb0eec2219688a08ed12fe7e3d50f248605a90eba8cad17',
      },
    ],
  },
  {
    name: 'silero_vad',
    kind: 'vad',
    description: 'Silero VAD v5 (16 kHz, 32 ms frames); used by long_silences when installed',
    license: 'MIT',
    meta: { engine: 'silero', sampleRate: 16000, source: `github ${SILERO.repo}@${SILERO.commit}` },
    files: [
      {
        path: 'silero_vad.onnx',
        url: pinned(SILERO.repo, SILERO.commit, 'src/silero_vad/data/silero_vad.onnx'),
        sizeBytes: 2327524,
        sha256: '1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3',
      },
    ],
  },
];
