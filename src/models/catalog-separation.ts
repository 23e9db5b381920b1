/**
 * Neural separation models. Each entry's name is its folder under MODELS_DIR and its file is the one the engine's
 * preset (src/engines/separation/onnx/presets.ts) looks for, so `models pull <name>` is all an operator does.
 *
 * Only models whose full-file checksum is published somewhere public are listed:
 * - Kim_Vocal_2 (MDX-Net vocals): sha256 and size as recorded from the UVR release file mirrored on Hugging Face
 *   (seanghay/uvr_models, Politrees/UVR_resources); the URL is UVR's own release.
 * - UVR-MDX-NET-Inst_HQ_3, UVR-MDX-NET-Voc_FT, UVR_MDXNET_KARA_2: size and sha256 from the Git LFS pointers of the
 *   same release files mirrored on Hugging Face (the method that reproduces the Kim_Vocal_2 value above); the URL is
 *   UVR's own release.
 * - htdemucs-openkara, htdemucs_ft-openkara: HTDemucs / HTDemucs-ft (Meta's weights; see DEMUCS_LICENSE) exported by
 *   thedavidweng/openkara-models (MIT) with the STFT outside the graph ("spectral-core" contract v1). URL, exact size
 *   and sha256 are the publisher's own: catalog/releases/2026-08-07-002.json of that repository (the release its
 *   catalog/channels/stable.json names, generation 12, read at commit 205c540), artifacts htdemucs.spectral.fp32.onnx
 *   (tag model-spectral-v1.0.0) and htdemucs_ft.spectral.fp32.onnx (tag model-ft-spectral-v1.0.0); the release
 *   also carries a .sha256 file per model.
 * Not here, for want of a published full-file checksum for a layout the engines run (docs/models.md lists what was
 * searched): the kuielab MDX-Net 4-stem set, an HTDemucs-6s export (sevagh layout), RoFormer ONNX exports. An
 * operator who has one lists it with its sha256 in MODELS_CATALOG_FILE (see docs/models.md), and only then is it used.
 * The authors' own checkpoint files (HTDemucs `.th`/safetensors, RoFormer `.ckpt` + yaml) are in
 * catalog-separation-checkpoints.ts and join this list.
 */
import type { OtherModelEntry } from './catalog.js';
import { CHECKPOINT_SEPARATION_MODELS } from './catalog-separation-checkpoints.js';

const UVR_RELEASE = 'https://github.com/TRvlvr/model_repo/releases/download/all_public_uvr_models';
const OPENKARA_RELEASE = 'https://github.com/thedavidweng/openkara-models/releases/download';
/** The demucs author's own words on the weights and his later Hugging Face tags disagree: the entry says so. */
const DEMUCS_LICENSE =
  'HTDemucs weights by Meta (demucs code: MIT); the demucs author states the weights are not covered by the MIT ' +
  'licence and are for research purposes only (facebookresearch/demucs#327, #508), while his 2026 Hugging Face ' +
  'copies were tagged MIT for a time; ONNX export by openkara-models (MIT)';

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
  mdxEntry('UVR-MDX-NET-Voc_FT', 'MDX-Net vocal model (UVR, fine-tuned); 44.1 kHz stereo; serves model_type 350', 'vocals', [350, 490], 66762490, '534b2070fcc7df514b13ef660dc8cbb328679c2374d04354a5c42bb14ecce111'),
  mdxEntry('UVR-MDX-NET-Inst_HQ_3', 'MDX-Net instrumental model (UVR); vocals = mixture - instrumental; serves model_type 350', 'instrumental', [350, 490], 66759214, '317554b07fe1ea5279a77f2b1520a41ea4b93432560c4ffd08792c30fddf9adc'),
  mdxEntry('UVR_MDXNET_KARA_2', 'MDX-Net karaoke model (UVR): keeps backing vocals apart from the lead; serves model_type 490 after a vocal model', 'instrumental', [490], 52786726, 'bf32e15105a09c0f7dddd2b67346146334d6f3ecb399ed7638eba2ab07cbf5f4'),
  {
    name: 'htdemucs-openkara',
    kind: 'separation',
    description: 'HTDemucs 4-stem (drums, bass, other, vocals; 9.00 dB mean SDR on MUSDB HQ per the demucs README); 44.1 kHz stereo; serves model_type 501, 340 and 360',
    license: DEMUCS_LICENSE,
    meta: { engine: 'onnx-htdemucs', layout: 'spectral-core', sampleRate: 44100, stems: ['drums', 'bass', 'other', 'vocals'], modelTypes: [501, 340, 360] },
    files: [
      {
        path: 'htdemucs.spectral.onnx',
        url: `${OPENKARA_RELEASE}/model-spectral-v1.0.0/htdemucs.spectral.onnx`,
        sizeBytes: 209469333,
        sha256: 'c3395410b1319976683bc874d97461655a9ea6089bbb0f3bd163d3829db13d02',
      },
    ],
  },
  {
    name: 'htdemucs_ft-openkara',
    kind: 'separation',
    description: 'HTDemucs fine-tuned bag (4 networks in one graph; 4x the run time of htdemucs); 44.1 kHz stereo; serves model_type 501, 340 and 360 when installed (never pulled automatically)',
    license: DEMUCS_LICENSE,
    meta: { engine: 'onnx-htdemucs', layout: 'spectral-core', sampleRate: 44100, stems: ['drums', 'bass', 'other', 'vocals'], modelTypes: [501, 340, 360] },
    files: [
      {
        path: 'htdemucs_ft.spectral.onnx',
        url: `${OPENKARA_RELEASE}/model-ft-spectral-v1.0.0/htdemucs_ft.spectral.onnx`,
        sizeBytes: 839009018,
        sha256: 'af604e3cceb04f1537547bb2edde16fed7cb065d2c8659a0b348bdd9ac16c3a4',
      },
    ],
  },
  ...CHECKPOINT_SEPARATION_MODELS,
];

function mdxEntry(name: string, description: string, stem: string, modelTypes: number[], sizeBytes: number, sha256: string): OtherModelEntry {
  return {
    name,
    kind: 'separation',
    description,
    license: 'Distributed by Ultimate Vocal Remover (MIT code); the weights carry no separate licence file',
    meta: { engine: 'onnx-mdx', sampleRate: 44100, stems: [stem], modelTypes },
    files: [{ path: `${name}.onnx`, url: `${UVR_RELEASE}/${name}.onnx`, sizeBytes, sha256 }],
  };
}
