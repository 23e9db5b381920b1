/**
 * Neural separation models. Each entry's name is its folder under MODELS_DIR and its file is the one the engine's
 * preset (src/engines/separation/onnx/presets.ts) looks for, so `models pull <name>` is all an operator does.
 *
 * Only models whose full-file checksum is published somewhere public are listed:
 * - Kim_Vocal_2 (MDX-Net vocals): sha256 and size as recorded from the UVR release file mirrored on Hugging Face
 *   (seanghay/uvr_models, Politrees/UVR_resources); the URL is UVR's own release.
 * Left out, because only UVR's tail-md5 (the md5 of the last 10,000 KiB, a lookup key, not a file checksum) could
 * be found: UVR-MDX-NET-Inst_HQ_3, UVR-MDX-NET-Voc_FT, UVR_MDXNET_KARA_2. HTDemucs / HTDemucs-6s ONNX exports
 * (sevagh/demucs.onnx layout) have no official release with a checksum. All of them still run when their .onnx is
 * copied to MODELS_DIR/<name>/<name>.onnx (see docs/api.md).
 */
import type { OtherModelEntry } from './catalog.js';

const UVR_RELEASE = 'https://github.com/TRvlvr/model_repo/releases/download/all_public_uvr_models';

export const SEPARATION_MODELS: readonly OtherModelEntry[] = [
  {
    name: 'Kim_Vocal_2',
    kind: 'separation',
    description: 'MDX-Net vocal model by Kimberley Jensen (UVR); 44.1 kHz stereo; serves model_type 350 (and the vocal half of 490)',
    license: 'Distributed by Ultimate Vocal Remover (MIT code); the weights carry no separate licence file',
    meta: { engine: 'onnx-mdx', sampleRate: 44100, stems: ['vocals'], modelTypes: [350, 490] },
    files: [
      {
        path: 'Kim_Vocal_2.onnx',
        url: `${UVR_RELEASE}/Kim_Vocal_2.onnx`,
        sizeBytes: 66759214,
        sha256: 'ce74ef3b6a6024ce44211a07be9cf8bc6d87728cc852a68ab34eb8e58cde9c8b',
      },
    ],
  },
];
