/**
 * Separation models run from their authors' own checkpoint files (torch.save `.th`/`.ckpt`, safetensors) through the
 * checkpoint-driven engines: `htdemucs-checkpoint` (HTDemucs, demucs' bag of models) and `roformer-checkpoint`
 * (BS-RoFormer and Mel-Band RoFormer, configured by the model's yaml, which is one of the entry's files).
 *
 * Every URL is the publisher's own location, pinned where the host allows it (a Hugging Face revision, a git commit,
 * a GitHub release). Every size and sha256 was found in public sources independent of the host (the research notes
 * list them; `index N` is the id of a file in the public code index, readable with its read_file tool); yaml files at a
 * pinned commit were also hashed here from the public git objects:
 * - Meta's `.th` (dl.fbaipublicfiles.com/demucs/hybrid_transformer, names in demucs 4.0.1 `remote/files.txt`): the
 *   part of each name after the `-` is the first 8 hex digits of its sha256, which is all demucs itself checks; the
 *   full digests and sizes are pinned by independent projects (htdemucs: index 58824325816, 65983970279; htdemucs_6s:
 *   68607235123, 65983970279, 58611627214; htdemucs_ft: 57486979429, 61146767025, 71141240543, 69205238373), and
 *   each starts with its name's 8 digits (the tests check that).
 * - The demucs author's safetensors copies (adefossez/HTDemucs, adefossez/HTDemucs-6s on Hugging Face, which demucs
 *   4.1.0 downloads first): weights, the `<signature>.json` holding class, args and kwargs, and the bag yaml, at the
 *   revisions recorded with sizes and digests in index 65983970279 (also 59770357865, 68625858089, 66217081094,
 *   70886335716). The bag yamls equal demucs 4.0.1's `remote/*.yaml`, hashed here.
 * - RoFormers: viperx's BS-RoFormer ep_317 from UVR's release (the URL ZFTurbo's docs/pretrained_models.md links;
 *   index 71141240543, 60943123569, 62044936803), Kim's Mel-Band RoFormer from her Hugging Face repository at a
 *   pinned revision (index 55052060143, 63640124113, 70503365288), each with the configuration from
 *   ZFTurbo/Music-Source-Separation-Training (MIT) at the commit that last changed it; MVSep Mega 53-stem from
 *   ZFTurbo's release v1.0.21 (openmirlab/bs-roformer-infer's registry as quoted in index 59786649431; 71256484562).
 * Licences are the publishers' own statements; where they conflict (demucs) the entry says so.
 */
import type { OtherModelEntry } from './catalog.js';

const META_TH = 'https://dl.fbaipublicfiles.com/demucs/hybrid_transformer';
const HF_HTDEMUCS = 'https://huggingface.co/adefossez/HTDemucs/resolve/bf35a81b663819a8255c8fefee17f9d812b786b5';
const HF_HTDEMUCS_6S = 'https://huggingface.co/adefossez/HTDemucs-6s/resolve/053e1404489b3dc58bf718224fac4b7316de8c93';
const UVR_RELEASE = 'https://github.com/TRvlvr/model_repo/releases/download/all_public_uvr_models';
const MSST_RAW = 'https://raw.githubusercontent.com/ZFTurbo/Music-Source-Separation-Training';
const MSST_RELEASE = 'https://github.com/ZFTurbo/Music-Source-Separation-Training/releases/download';

/** Why the licence reads as it does: the author's own words and his later Hugging Face tags disagree. */
const DEMUCS_WEIGHTS_LICENSE =
  'HTDemucs weights by Meta (demucs code: MIT). The demucs author states the pretrained weights are not covered by ' +
  'the MIT licence and are provided for research purposes only (facebookresearch/demucs#327, #508); his 2026 Hugging ' +
  'Face copies were tagged MIT, a tag since withdrawn (adefossez/HTDemucs-ft). Until he settles it, only research use ' +
  'is clearly allowed';

const FOUR = ['drums', 'bass', 'other', 'vocals'] as const;
const SIX = ['drums', 'bass', 'other', 'vocals', 'guitar', 'piano'] as const;
/** HTDemucs at 44.1 kHz: training segment 39/5 s, STFT 4096/1024 (demucs' official kwargs). */
const HTDEMUCS_SHAPE = { sampleRate: 44100, segment: 343980, nFft: 4096, hop: 1024 } as const;

/** The 53 outputs of the MVSep Mega model in head order (`training.instruments` of its yaml). */
export const MEGA53_INSTRUMENTS = Object.freeze([
  'accordion', 'acoustic-guitar', 'back-vocal', 'banjo', 'bass', 'bassoon', 'bells', 'bowed_strings', 'brass', 'cello',
  'clarinet', 'congas', 'digital-piano', 'dobro', 'double-bass', 'drums', 'electric-guitar', 'flute', 'french-horn',
  'glockenspiel', 'guitar', 'harmonica', 'harp', 'harpsichord', 'hh', 'keys', 'kick', 'lead-vocal', 'mandolin',
  'marimba', 'oboe', 'organ', 'percussion', 'piano', 'saxophone', 'sitar', 'snare', 'strings', 'synth', 'tambourine',
  'timpani', 'toms', 'triangle', 'trombone', 'trumpet', 'tuba', 'ukulele', 'viola', 'violin', 'vocal', 'wind',
  'wind-chimes', 'woodwind',
] as const);

/**
 * Soundry's stem -> the Mega head that gives it. The model has no `other` head (its outputs overlap and do not sum to
 * the mix), so 320/501's `other` cannot come from it directly; `wind` includes brass (measured correlation 0.90).
 */
const MEGA53_HEADS = Object.freeze({
  piano: 33, guitar: 20, strings: 37, wind: 50, synthesizer: 38,
  vocals: 49, drums: 15, bass: 4, lead_vocals: 27, backing_vocals: 2,
});

function identity(n: number): number[][] {
  return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
}

function th(file: string, sizeBytes: number, sha256: string) {
  return { path: file, url: `${META_TH}/${file}`, sizeBytes, sha256 };
}

export const CHECKPOINT_SEPARATION_MODELS: readonly OtherModelEntry[] = [
  {
    name: 'htdemucs-th',
    kind: 'separation',
    description: "HTDemucs 4-stem, Meta's own checkpoint (torch.save, fp16); 9.00 dB mean SDR on MUSDB18-HQ test (demucs README); serves model_type 501, 340 and 360",
    license: DEMUCS_WEIGHTS_LICENSE,
    meta: {
      engine: 'htdemucs-checkpoint', format: 'torch', ...HTDEMUCS_SHAPE, sources: [...FOUR], stems: [...FOUR], modelTypes: [501, 340, 360],
      models: [{ signature: '955717e8', file: '955717e8-8726e21a.th' }], bagWeights: [[1, 1, 1, 1]],
    },
    files: [th('955717e8-8726e21a.th', 84141911, '8726e21a993978c7ba086d3872e7608d7d5bfca646ca4aca459ffda844faa8b4')],
  },
  {
    name: 'htdemucs_6s-th',
    kind: 'separation',
    description: "HTDemucs 6-stem (adds guitar and piano; the README calls piano \"not working great\"), Meta's own checkpoint; serves model_type 320, 380 and 390",
    license: DEMUCS_WEIGHTS_LICENSE,
    meta: {
      engine: 'htdemucs-checkpoint', format: 'torch', ...HTDEMUCS_SHAPE, sources: [...SIX], stems: [...SIX], modelTypes: [320, 380, 390],
      models: [{ signature: '5c90dfd2', file: '5c90dfd2-34c22ccb.th' }], bagWeights: [[1, 1, 1, 1, 1, 1]],
    },
    files: [th('5c90dfd2-34c22ccb.th', 54996327, '34c22ccb381c6f9fdbf324f04e1e2fe21aaaf293f5ded163a162697ff9a02ddd')],
  },
  {
    name: 'htdemucs_ft-th',
    kind: 'separation',
    description: "HTDemucs fine-tuned bag, Meta's own checkpoints: four networks, each kept for one source (4x the run time of htdemucs); 9.0 dB in the demucs README table; serves model_type 501, 340 and 360 when installed",
    license: DEMUCS_WEIGHTS_LICENSE,
    meta: {
      engine: 'htdemucs-checkpoint', format: 'torch', ...HTDEMUCS_SHAPE, sources: [...FOUR], stems: [...FOUR], modelTypes: [501, 340, 360],
      // demucs' remote/htdemucs_ft.yaml: row i (model i) weighs source i only.
      models: [
        { signature: 'f7e0c4bc', file: 'f7e0c4bc-ba3fe64a.th' },
        { signature: 'd12395a8', file: 'd12395a8-e57c48e6.th' },
        { signature: '92cfc3b6', file: '92cfc3b6-ef3bcb9c.th' },
        { signature: '04573f0d', file: '04573f0d-f3cf25b2.th' },
      ],
      bagWeights: identity(4),
      autoPull: false,
    },
    files: [
      th('f7e0c4bc-ba3fe64a.th', 84141271, 'ba3fe64ae8ef66ac9a4857222ce48efbdc5eb3ad375cb79dd13debee5aaa4066'),
      th('d12395a8-e57c48e6.th', 84141271, 'e57c48e6b0e38af4f7118d7bd08c49f0a0c0edf7d09143bdd902ea0d237303e6'),
      th('92cfc3b6-ef3bcb9c.th', 84141271, 'ef3bcb9c8b40d14ae5d51b6db2587339cc12c6b77c0be151ce6d69002e087bf2'),
      th('04573f0d-f3cf25b2.th', 84141271, 'f3cf25b222c4eed7cd49dd8b2c9597d50c18bd154090f7b919cfa5f93cf22c49'),
    ],
  },
  {
    name: 'htdemucs-safetensors',
    kind: 'separation',
    description: "HTDemucs 4-stem, the demucs author's safetensors copy (the same network as htdemucs-th; class and kwargs in 955717e8.json); serves model_type 501, 340 and 360",
    license: DEMUCS_WEIGHTS_LICENSE,
    meta: {
      engine: 'htdemucs-checkpoint', format: 'safetensors', ...HTDEMUCS_SHAPE, sources: [...FOUR], stems: [...FOUR], modelTypes: [501, 340, 360],
      models: [{ signature: '955717e8', file: '955717e8.safetensors', kwargsFile: '955717e8.json' }], bagFile: 'htdemucs.yaml', bagWeights: [[1, 1, 1, 1]],
    },
    files: [
      { path: '955717e8.safetensors', url: `${HF_HTDEMUCS}/955717e8.safetensors`, sizeBytes: 84025440, sha256: 'd9fa14133cfcc034a6758923bb3a8ca9f8dfd0b582134643bbf83f72c17576dd' },
      { path: '955717e8.json', url: `${HF_HTDEMUCS}/955717e8.json`, sizeBytes: 12087, sha256: '12540373de858920b60002ebfbe17738860dbf2e89df625dc3b7875af2d28491' },
      { path: 'htdemucs.yaml', url: `${HF_HTDEMUCS}/htdemucs.yaml`, sizeBytes: 21, sha256: '239c445d0b14454d541ad8bd9bb271c9e536d267e8a4625208744cbb2e7bb66c' },
    ],
  },
  {
    name: 'htdemucs_6s-safetensors',
    kind: 'separation',
    description: "HTDemucs 6-stem, the demucs author's safetensors copy (the same network as htdemucs_6s-th; class and kwargs in 5c90dfd2.json); serves model_type 320, 380 and 390",
    license: DEMUCS_WEIGHTS_LICENSE,
    meta: {
      engine: 'htdemucs-checkpoint', format: 'safetensors', ...HTDEMUCS_SHAPE, sources: [...SIX], stems: [...SIX], modelTypes: [320, 380, 390],
      models: [{ signature: '5c90dfd2', file: '5c90dfd2.safetensors', kwargsFile: '5c90dfd2.json' }], bagFile: 'htdemucs_6s.yaml', bagWeights: [[1, 1, 1, 1, 1, 1]],
    },
    files: [
      { path: '5c90dfd2.safetensors', url: `${HF_HTDEMUCS_6S}/5c90dfd2.safetensors`, sizeBytes: 54885744, sha256: 'd2a1745f0744721f6b8ca5bf469b67c651ea5ed1b52998cab033b2158609d411' },
      { path: '5c90dfd2.json', url: `${HF_HTDEMUCS_6S}/5c90dfd2.json`, sizeBytes: 10398, sha256: '72d7b4739ba40c8ff1d697404232edd335f397cedbf1bb88eec0034bdbab153e' },
      { path: 'htdemucs_6s.yaml', url: `${HF_HTDEMUCS_6S}/htdemucs_6s.yaml`, sizeBytes: 21, sha256: '207405151270af8fd81c2373c25d27950916682ac91dca7884a11ce13dad6f58' },
    ],
  },
  {
    name: 'mel-band-roformer-kim',
    kind: 'separation',
    description: 'Mel-Band RoFormer vocals by Kimberley Jensen (228.2 M parameters, fp32): 10.98 dB vocals SDR on MVSep Multisong (ZFTurbo docs); serves model_type 350 and the vocal half of 490',
    license: "MIT, as stated on the model card of KimberleyJSN/melbandroformer (training data not disclosed); configuration from ZFTurbo/Music-Source-Separation-Training (MIT)",
    meta: {
      engine: 'roformer-checkpoint', architecture: 'mel_band_roformer', sampleRate: 44100, stems: ['vocals'], complement: 'instrumental', modelTypes: [350, 490],
      checkpointFile: 'MelBandRoformer.ckpt', configFile: 'config_vocals_mel_band_roformer_kj.yaml',
      // python-audio-separator's chunk: hop * (inference.dim_t - 1) = 441 * 255 (the yaml's audio.chunk_size, 352800,
      // is what ZFTurbo's own inference script uses); the engine reads the yaml as audio-separator does.
      nFft: 2048, hop: 441, chunkSize: 112455, numOverlap: 2,
    },
    files: [
      { path: 'MelBandRoformer.ckpt', url: 'https://huggingface.co/KimberleyJSN/melbandroformer/resolve/ac9b0614ab3cd7f77219e18ba494dfd93956c348/MelBandRoformer.ckpt', sizeBytes: 913106900, sha256: '87201f4d31afb5bc79993230fc49446918425574db48c01c405e44f365c7559e' },
      { path: 'config_vocals_mel_band_roformer_kj.yaml', url: `${MSST_RAW}/4a9f4d74ba06fb271fdc92c5c6528dfb79fc90bd/configs/KimberleyJensen/config_vocals_mel_band_roformer_kj.yaml`, sizeBytes: 1721, sha256: 'f63f38eb1e6e40a7db0dade714a5ae257555dd8748f4e774eae8679275a81926' },
    ],
  },
  {
    name: 'bs-roformer-viperx-1297',
    kind: 'separation',
    description: 'BS-RoFormer vocals by viperx (ep_317; 159.8 M parameters, fp32): 10.87 dB vocals SDR on MVSep Multisong (ZFTurbo docs), 12.9755 in its file name; serves model_type 350 and the vocal half of 490',
    license: "viperx's BS-RoFormer weights as distributed in Ultimate Vocal Remover's model repository (TRvlvr/model_repo): no licence is stated for them; configuration from ZFTurbo/Music-Source-Separation-Training (MIT)",
    meta: {
      engine: 'roformer-checkpoint', architecture: 'bs_roformer', sampleRate: 44100, stems: ['vocals'], complement: 'instrumental', modelTypes: [350, 490],
      checkpointFile: 'model_bs_roformer_ep_317_sdr_12.9755.ckpt', configFile: 'model_bs_roformer_ep_317_sdr_12.9755.yaml',
      // From the yaml (the engine reads it; these say what to expect): STFT 2048/441, 8 s chunks, 2 overlaps.
      nFft: 2048, hop: 441, chunkSize: 352800, numOverlap: 2,
    },
    files: [
      { path: 'model_bs_roformer_ep_317_sdr_12.9755.ckpt', url: `${UVR_RELEASE}/model_bs_roformer_ep_317_sdr_12.9755.ckpt`, sizeBytes: 639331213, sha256: '5b84f37e8d444c8cb30c79d77f613a41c05868ff9c9ac6c7049c00aefae115aa' },
      { path: 'model_bs_roformer_ep_317_sdr_12.9755.yaml', url: `${MSST_RAW}/d9672dac1160ebe9c39aec3d3f3320190e49a5c0/configs/viperx/model_bs_roformer_ep_317_sdr_12.9755.yaml`, sizeBytes: 1881, sha256: '42e5635ceab7287b83d9591c9880966f0b61cff26a0a40a29d236bacb32e5f2c' },
    ],
  },
  {
    name: 'bs-roformer-mvsep-mega-53',
    kind: 'separation',
    description: 'MVSep Mega BS-RoFormer, 53 overlapping instrument outputs (682 M parameters, fp16; 53 heads of about 12.3 M on a shared trunk), whose network can run only the heads a task needs; serves model_type 380, 390, 491, 492 and 493 when a site installs it (never pulled automatically)',
    license: 'Licence of the weights not stated by their publisher (ZFTurbo/Music-Source-Separation-Training release v1.0.21; the code is MIT): a site opts in',
    meta: {
      engine: 'roformer-checkpoint', architecture: 'bs_roformer', sampleRate: 44100, modelTypes: [380, 390, 491, 492, 493],
      stems: ['piano', 'guitar', 'strings', 'wind', 'synthesizer'],
      checkpointFile: 'mvsep_mega_model_bs_roformer_53_stems_v1.ckpt', configFile: 'mvsep_mega_model_bs_roformer_53_stems.yaml',
      instruments: [...MEGA53_INSTRUMENTS], heads: { ...MEGA53_HEADS },
      nFft: 2048, hop: 512, chunkSize: 882000, numOverlap: 2,
      autoPull: false,
    },
    files: [
      { path: 'mvsep_mega_model_bs_roformer_53_stems_v1.ckpt', url: `${MSST_RELEASE}/v1.0.21/mvsep_mega_model_bs_roformer_53_stems_v1.ckpt`, sizeBytes: 1368919887, sha256: 'c62820893bbf86d4e734f966bd142d9157cfc8bb8e79e9d8f9ea553f3ff3519f' },
      { path: 'mvsep_mega_model_bs_roformer_53_stems.yaml', url: `${MSST_RELEASE}/v1.0.21/mvsep_mega_model_bs_roformer_53_stems.yaml`, sizeBytes: 4184, sha256: '7e198062a251587088adb91215a4f44ab59e67bd62fcc805cf54d6e7dfc51103' },
    ],
  },
];
