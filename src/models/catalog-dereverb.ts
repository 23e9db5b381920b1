/**
 * Learned dereverberation for `remove_reverb`, `remove_echo` and studio_sound (src/engines/enhance/learned-dereverb.ts
 * runs them through the RoFormer stage of the separation engine and keeps the dry stem). Candidates considered, from
 * python-audio-separator 0.47.1's model list (models.json, models-scores.json) and the authors' model cards:
 *
 * - anvuew's Mel-Band RoFormer `dereverb_mel_band_roformer_anvuew_sdr_19.1729.ckpt` (stems noreverb / reverb, target
 *   noreverb; 19.1729 dB SDR on the author's validation set, the figure in its file name; the model card states no
 *   other figure): the default. Licence GPL-3.0 (model card of huggingface.co/anvuew/dereverb_mel_band_roformer):
 *   commercial use allowed, copyleft on redistribution of the weights (Soundry downloads them, it does not ship them).
 *   Size 913,107,578 bytes and sha256 9262877b… at repository revision cef05ad2b5b3145ea5c149d3ad5d1f8439b34d06, pinned
 *   by two independent projects (public code index 67089740036 and 62502897077; the same digest and size in an install
 *   script downloading a mirror, 61473080460). Its parameter count, 228,203,172 (60428918793), is that of Kim's vocal
 *   Mel-Band RoFormer (dim 384, depth 6, 60 bands), which Soundry's RoFormer engine is proved on.
 *   The yaml (1,846 bytes) has two published digests: 1599d9ea… for the copy at
 *   Eddycrack864/audio-separator-models@785c7f7 (61473080460, which downloads that URL and checks it) and 66963a9d… in
 *   two projects that name no URL (62551315840, 60428918793). The entry takes the pinned mirror's copy, whose URL and
 *   digest are known to belong together; the yaml text itself could not be read here (no model hub reachable).
 * - anvuew's `dereverb_mel_band_roformer_less_aggressive_anvuew_sdr_18.8050.ckpt` and the BS-RoFormer
 *   `deverb_bs_roformer_8_384dim_10depth.ckpt` (GPL-3.0, anvuew/dereverb_bs_roformer): no published sha256 found.
 * - Sucial's `dereverb-echo_mel_band_roformer_sdr_10.0169.ckpt` and `…_sdr_13.4843_v2.ckpt` (stems dry / no dry; remove
 *   echo and delay too): licence CC BY-NC-SA 4.0 (huggingface.co/Sucial/Dereverb-Echo_Mel_Band_Roformer), non-commercial,
 *   so never a default; no published sha256 found, so not listed. A site may list it in MODELS_CATALOG_FILE.
 * - UVR's MDX-Net `Reverb_HQ_By_FoxJoy.onnx` (target stem `reverb`, dry = mixture - reverb; runs on Soundry's MDX stage):
 *   UVR distributes it without a licence for the weights, and no published sha256 was found: not listed.
 * - UVR's VR-arch `UVR-DeEcho-DeReverb.pth`, `UVR-De-Echo-Normal/Aggressive.pth` (FoxJoy) and
 *   `UVR-De-Reverb-aufr33-jarredou.pth`: VR-arch networks, which Soundry has no engine for.
 */
import type { OtherModelEntry } from './catalog.js';

const ANVUEW = 'https://huggingface.co/anvuew/dereverb_mel_band_roformer/resolve/cef05ad2b5b3145ea5c149d3ad5d1f8439b34d06';
const MIRROR = 'https://huggingface.co/Eddycrack864/audio-separator-models/resolve/785c7f7ec9dc7e9b0d0eb22616cdf4d00778a5b5/roformers';

/** meta.engine of a learned dereverberation model (what learned-dereverb.ts runs). */
export const DEREVERB_ENGINE = 'roformer-dereverb';

export const DEREVERB_MODELS: readonly OtherModelEntry[] = [
  {
    name: 'dereverb-mel-band-roformer-anvuew',
    kind: 'enhance',
    description:
      "Mel-Band RoFormer dereverberation by anvuew (228.2 M parameters, fp32; 44.1 kHz stereo; stems noreverb / reverb): 19.17 dB SDR on the author's validation set (file name); serves remove_reverb, remove_echo and studio_sound",
    license: 'GPL-3.0, as stated on the model card of anvuew/dereverb_mel_band_roformer (copyleft on redistribution of the weights; training data not disclosed)',
    meta: {
      engine: DEREVERB_ENGINE, architecture: 'mel_band_roformer', sampleRate: 44100, dryStem: 'noreverb',
      checkpointFile: 'dereverb_mel_band_roformer_anvuew_sdr_19.1729.ckpt', configFile: 'dereverb_mel_band_roformer_anvuew.yaml',
    },
    files: [
      { path: 'dereverb_mel_band_roformer_anvuew_sdr_19.1729.ckpt', url: `${ANVUEW}/dereverb_mel_band_roformer_anvuew_sdr_19.1729.ckpt`, sizeBytes: 913107578, sha256: '9262877b87e9ebb0fb808a456b0a411fa677f5df31c8383c1254af531c078970' },
      { path: 'dereverb_mel_band_roformer_anvuew.yaml', url: `${MIRROR}/dereverb_mel_band_roformer_anvuew.yaml`, sizeBytes: 1846, sha256: '1599d9ea717ea2b5b3bc55d936f752b8d0f67baaa3de95acd6d03259a2f37784' },
    ],
  },
];
