/**
 * Kokoro-82M v1.0 (hexgrad/Kokoro-82M, Apache-2.0) as exported to ONNX by onnx-community/Kokoro-82M-v1.0-ONNX,
 * pinned to revision 1939ad2a8e416c0acfeecc08a694d14ef25f2231. Two kinds of entry: the model (the fp32 graph and the
 * tokenizer.json whose `model.vocab` maps phoneme symbols to ids) and one small entry per voice (voices/<name>.bin,
 * float32 [510,1,256]: one style vector per token count). A voice is usable when both its entry and the model's are
 * installed (verified); the model is downloaded once for every voice.
 *
 * Why fp32 (onnx/model.onnx, 325.5 MB) and not a smaller export: on a CPU the fp32 graph is the reference quality and
 * the fastest of the exports. The int8 `model_quantized.onnx` (92 MB) runs dynamic ConvInteger, reported about twice
 * as slow (real-time factor ~1.8 against ~0.8-1.0 for fp32 in a published ARM sweep, and the kokoro-onnx users' "int8
 * is twice as slow" on x86); the fp16/q8f16 exports are cast back to fp32 by the CPU provider and were reported to
 * produce NaN samples on some CPUs. Disk is cheaper than a slower, riskier voice.
 *
 * Where the checksums come from. Hugging Face stores these files in Git LFS, whose pointer carries the sha256 and
 * size; the Hub itself is not reachable from the machines this was written on, so the values were taken from public
 * projects that pin this exact revision and verify the files on download, and kept only where they agree:
 *   - onnx/model.onnx 325532232 bytes, sha256 8fbea51e...: a project's tools/mobile/fetch-models.mjs records two
 *     independent stream-hashed downloads (2026-09-27) with this digest and length; a second, unrelated project's
 *     pinned manifest (KOKORO_REVISION = 1939ad2a...) gives the same digest and size, as do three more manifests.
 *   - tokenizer.json 3497 bytes, sha256 77a02c8e...: the same pinned manifest, the fetch-models.mjs tokenizer pin,
 *     and a third project's fetch-kokoro-model.mjs (same revision) agree.
 *   - voices/*.bin 522240 bytes each (510 x 256 float32, which the size itself confirms): the pinned manifest lists
 *     the 27 English voices 6001-6027; fetch-models.mjs independently gives the same digests for 12 of them.
 *   - 6028-6035 (ef_dora, em_alex, em_santa, ff_siwis, pf_dora, pm_alex, pm_santa, am_santa), added later:
 *     DABSandDRUMS/stream-engine scripts/fetch-tts-model.sh (commit de49d6f4, REV = 1939ad2a...) lists the sha256
 *     of every voice at this revision and reproduces all 27 English digests above exactly; for the seven Spanish,
 *     French and Portuguese voices Mohanavadivelu/web-text-to-speech server/engines/kokoro/model_store.py (commit
 *     1129f6c7, REVISION = 1939ad2a..., VOICE_BYTES = 510*256*4) gives the same digests independently (and
 *     reproduces the 24 English voices it lists). am_santa is in the first only among the pinned manifests; five
 *     other projects' manifests (two fetching resolve/main, whose other digests equal this revision's) give the
 *     same digest for it, with 522240 bytes.
 *   - 6036-6040 (jf_alpha, jf_gongitsune, jf_nezumi, jf_tebukuro, jm_kumo), added with the Japanese front end: the
 *     same stream-engine manifest (commit de49d6f4, REV = 1939ad2a...) lists them; ochisamu/CharaDock
 *     desktop/lib/tts-model-download.cjs (commit 1948ed7a, KOKORO_COMMIT = 1939ad2a..., each file checked for
 *     522240 bytes and its sha256 on download) gives the same five digests independently, as do two unpinned
 *     manifests (a provisioning manifest of all 54 voices, an echogarden voices-package lock with sizes 522240).
 * Left out for want of Soundry's phonemizer, not of a checksum: hf_/hm_ Hindi and if_/im_ Italian (not API
 * languages) and zf_/zm_ Mandarin (its reference front end is misaki's pinyin, not espeak). A site can pin a style table of its own with MODELS_CATALOG_FILE (docs/models.md); nothing is guessed.
 */
import type { AgeGroup, Gender } from '../ports/engines.js';

/** Shared fields of every catalog entry (kept structurally identical to catalog.ts's BaseModelEntry). */
interface KokoroBase {
  name: string;
  kind: 'tts';
  description: string;
  license: string;
  files: Array<{ path: string; url: string; sha256?: string; md5?: string; sizeBytes: number }>;
}

/** The Kokoro graph and its vocabulary. */
export interface KokoroModelEntry extends KokoroBase {
  engine: 'kokoro';
  kokoro: { modelFile: string; tokenizerFile: string; sampleRate: number };
}

/** One Kokoro voice: a style table used with the model entry named in `model`. */
export interface KokoroVoiceMeta {
  /** Kokoro's own voice name, e.g. af_heart. */
  voice: string;
  /** Stable numeric API voice id (6001-6999 are Kokoro's, docs/models.md). */
  apiId: number;
  displayName: string;
  /** Spec language key. */
  language: string;
  /** The espeak-ng voice that phonemizes for it ("en-us", or "en" for British English) and Kokoro's dialect rules. */
  espeakVoice: string;
  dialect: KokoroDialect;
  gender: Gender;
  age: AgeGroup;
  /** Name of the model entry this voice runs on. */
  model: string;
  file: string;
}

export interface KokoroVoiceEntry extends KokoroBase {
  engine: 'kokoro-voice';
  kokoroVoice: KokoroVoiceMeta;
}

/**
 * The phoneme rule set (src/engines/tts/kokoro.ts): Kokoro's language codes a, b, e, f, h, i, p on espeak's IPA, and
 * j, whose phonemes come from the kana front end (src/engines/tts/kokoro-ja.ts) instead of espeak.
 */
export type KokoroDialect = 'en-us' | 'en-gb' | 'es' | 'fr' | 'hi' | 'it' | 'ja' | 'pt-br';

export const KOKORO_REPO = 'onnx-community/Kokoro-82M-v1.0-ONNX';
export const KOKORO_REVISION = '1939ad2a8e416c0acfeecc08a694d14ef25f2231';
export const KOKORO_MODEL_NAME = 'kokoro-82m-v1.0';
const LICENSE = 'Apache-2.0 (hexgrad/Kokoro-82M)';
const VOICE_BYTES = 522240;

function hub(path: string): string {
  return `https://huggingface.co/${KOKORO_REPO}/resolve/${KOKORO_REVISION}/${path}`;
}

const MODEL: KokoroModelEntry = {
  name: KOKORO_MODEL_NAME,
  kind: 'tts',
  engine: 'kokoro',
  description: 'Kokoro-82M v1.0 neural TTS (fp32 ONNX, 24 kHz); needed by every Kokoro voice',
  license: LICENSE,
  files: [
    { path: 'onnx/model.onnx', url: hub('onnx/model.onnx'), sizeBytes: 325532232, sha256: '8fbea51ea711f2af382e88c833d9e288c6dc82ce5e98421ea61c058ce21a34cb' },
    { path: 'tokenizer.json', url: hub('tokenizer.json'), sizeBytes: 3497, sha256: '77a02c8e164413299b4b4c403b14f8e0e1c1b727db4d46a09d6327b861060a34' },
  ],
  kokoro: { modelFile: 'onnx/model.onnx', tokenizerFile: 'tokenizer.json', sampleRate: 24000 },
};

/**
 * [voice, API id, sha256]. Ids are written here once and never renumbered or reused (clients store them); a voice
 * added later takes the next free number. Gender and accent come from Kokoro's naming: the first letter is the
 * language/accent (KOKORO_LANGUAGE_CODES: a = American English, b = British English, e, f, j, p), the second f =
 * female, m = male (VOICES.md). Within a language the catalog's order is the list's (after KOKORO_DEFAULT_VOICES), so
 * the first installed voice of a language and gender is its default: ef_dora/em_alex, ff_siwis, pf_dora/pm_alex,
 * jf_alpha/jm_kumo.
 */
const VOICES: Array<[string, number, string]> = [
  ['af_heart', 6001, 'd583ccff3cdca2f7fae535cb998ac07e9fcb90f09737b9a41fa2734ec44a8f0b'],
  ['af_alloy', 6002, 'c4a6b876047fd7fb472edf4ebd63cfac7c3b958a7cae7c106e8f038ca6308c45'],
  ['af_aoede', 6003, '4a004c33430762e2461eedb2013fad808ef4ab3121f5300f554476caf58d8361'],
  ['af_bella', 6004, 'f69d836209b78eb8c66e75e3cda491e26ea838a3674257e9d4e5703cbaf55c8b'],
  ['af_jessica', 6005, 'a240a5e3c15b43563d6e923bdca8ef5613a23471d9b77653694012435df23bd8'],
  ['af_kore', 6006, '9be5221b6a941c04b561959b8ff0b06e809444dcc4ab7e75a7b23606f691819e'],
  ['af_nicole', 6007, 'cd2191ab31b914ed7b318416b0e4440fdf392ddad9106a060819aa600a64f59a'],
  ['af_nova', 6008, '18778272caa0d0eebaea251c35fd635f038434f9eee5e691d02a174bd328414f'],
  ['af_river', 6009, '00a2bcf82b1d86e8f19902ede58c65ccf6c0e43b44b7d74fad54e5d8933c9c30'],
  ['af_sarah', 6010, '4409fbc125afabacc615d94db5398d847006a737b0247d6892b7a9a0007a2f0a'],
  ['af_sky', 6011, '4435255c9744f3f31659e0d714ab7689bf65d9e77ec1cce060f083912614f0b9'],
  ['am_adam', 6012, '162b035ed91cfc48b6046982184c645f72edcdd1b82843347f605d7bf7b15716'],
  ['am_echo', 6013, '3968b92c3c4cd1c4416dbded36c13eaa388a90d5788d02a13e4d781f5f8cf3c3'],
  ['am_eric', 6014, 'e8b5be17edd1e3636901ce7598baafe2dc8dd8ff707a0c23bf9e461add7e2832'],
  ['am_fenrir', 6015, 'c27989f741f7ee34d273a39d8a595cc0837d35f5ced9a29b7cc162614616df43'],
  ['am_liam', 6016, '52403be32fd047c6a44517cb0bcd6b134f2a18baa73e70ef41651e0eab921ade'],
  ['am_michael', 6017, '1d1f21dd8da39c30705cd4c75d039d265e9bc4a2a93ed09bc9e1b1225eb95ba1'],
  ['am_onyx', 6018, 'da5d135b424164916d75a68ffb4c2abce3d7d5ccc82dd1ee6cf447ce286145e6'],
  ['am_puck', 6019, 'fcf73c989033e9233e0b98713eca600c8c74dcc1614b37009d5450ff4a2274a0'],
  ['bf_alice', 6020, '08afa6ba24da61ea5e8efa139e5aadc938d83f0a6da5a900adaf763ac1da5573'],
  ['bf_emma', 6021, '669fe0647f9dd04fcab92f1439a40eeb4c8b4ab1f82e4996fe3d918ce4a63b73'],
  ['bf_isabella', 6022, '3754352c4aaa46d17f27654ab7518d65b62ad6163a0f55a5f4330c2da2c4e94f'],
  ['bf_lily', 6023, '5e0ee32ebe64a467124976b14e69590746f1c4ce41a12b587a50c862edfea335'],
  ['bm_daniel', 6024, '6b3194bbceffb746733cbc22c8f593dd44e401a71d53895a2dca891bc595a1e8'],
  ['bm_fable', 6025, 'f889083196807b4adb15e9204252165f503b8d33d3982e681c52443c49d798f1'],
  ['bm_george', 6026, 'c4b235a4c1f2cd3b939fed08b899ce9385638b763f7b73a59616c4fc9bd6c9bc'],
  ['bm_lewis', 6027, 'b8f671cef828c30e66fdf0b0756a76bba58f6bb3398cbbf27058642acbcedb97'],
  // Added with their checksums (header): e = Spanish, f = French, p = Brazilian Portuguese; am_santa is US English.
  ['ef_dora', 6028, 'f66ec66bd295acb18372e37008533a9a3228483ccd294e7538d5d9294ac9a532'],
  ['em_alex', 6029, '27809e9eafdcbcfff90a3016c697568676531de2a2c39cee29c96c7bd6b83e95'],
  ['em_santa', 6030, 'ad43b774e1ca24d05c6161297d8aeb770ac3d29bb95daf516727af5f7d543683'],
  ['ff_siwis', 6031, 'a35f5675ad08948e326ae75fd0ea16ba5d0042e4f76b5f3d1df77d0a48c54861'],
  ['pf_dora', 6032, '3da7b5b2d91847ebf5646f57631af6ececae3c29a89cd300f06edf9aa6cfe9ee'],
  ['pm_alex', 6033, '0175c753f59c54e7fd5a995bedef0c5ff2fb67e0043dd3dcb2ae74ec2acbeb2a'],
  ['pm_santa', 6034, '8b012db3185778afe2e45a62cbad69db73021774fe68dda634bcc748a982eede'],
  ['am_santa', 6035, '61150cf726ab6c5ed7a99f90a304f91f5a72c00c592e89ec94e5df11c319227a'],
  // j = Japanese (header): jf_alpha first, the best graded (C+ in VOICES.md), so it is the female default; jm_kumo the male.
  ['jf_alpha', 6036, '56b479360aad9f367aeb8cef908f9201cf48b4555e488c5f4590c9dfcd978bb6'],
  ['jf_gongitsune', 6037, '0f1181f3772d27b7c12aaf4bcd71e31b186c4146e330d074a3dc64ee392af396'],
  ['jf_nezumi', 6038, '13cb71eebb0b48739d444558322aa35a8c9a489b80e1e631f14d2e6aea93026b'],
  ['jf_tebukuro', 6039, '29c6c0561b4288d59639677bebe7533c919743d5ea68d0d2ae992644beea6696'],
  ['jm_kumo', 6040, '09e959d239724c734d65661f06f14cdabcddfd476bfaaad905a937099ae9e64f'],
];

/**
 * The voices a podcast gets when Kokoro voices are installed and it names no speakers: the best graded of each
 * accent and gender in hexgrad/Kokoro-82M's VOICES.md (af_heart A, bf_emma B-, am_michael C+, bm_george C).
 */
export const KOKORO_DEFAULT_VOICES: readonly string[] = ['af_heart', 'am_michael', 'bf_emma', 'bm_george'];

/** Kokoro's first letter -> spec language, espeak voice, dialect rules and a label (VOICES.md of hexgrad/Kokoro-82M). */
export const KOKORO_LANGUAGE_CODES: Readonly<Record<string, { language: string; espeakVoice: string; dialect: KokoroDialect; label: string }>> = {
  a: { language: 'en', espeakVoice: 'en-us', dialect: 'en-us', label: 'US English' },
  b: { language: 'en', espeakVoice: 'en', dialect: 'en-gb', label: 'British English' },
  e: { language: 'es', espeakVoice: 'es', dialect: 'es', label: 'Spanish' },
  f: { language: 'fr', espeakVoice: 'fr', dialect: 'fr', label: 'French' },
  p: { language: 'pt', espeakVoice: 'pt-br', dialect: 'pt-br', label: 'Brazilian Portuguese' },
  // espeakVoice is not used to phonemize Japanese (kokoro-ja.ts); it names the built-in fallback's accent.
  j: { language: 'ja', espeakVoice: 'ja', dialect: 'ja', label: 'Japanese' },
};

/** A voice entry from Kokoro's voice name; exported so a site's catalog file can add a voice the same way. */
export function kokoroVoiceEntry(voice: string, apiId: number, file: { url: string; sizeBytes: number; sha256?: string; md5?: string }): KokoroVoiceEntry {
  const code = KOKORO_LANGUAGE_CODES[voice[0] ?? ''];
  const gender: Gender | null = voice[1] === 'f' ? 'female' : voice[1] === 'm' ? 'male' : null;
  if (!code || !gender || voice[2] !== '_') throw new Error(`Kokoro voice ${voice}: not a voice name Soundry can phonemize for (a, b, e, f, j or p, then f or m, then _name)`);
  const given = voice.slice(3);
  const path = `voices/${voice}.bin`;
  return {
    name: `kokoro-${voice}`,
    kind: 'tts',
    engine: 'kokoro-voice',
    description: `Kokoro voice ${voice} (${code.label}, ${gender}); runs on ${KOKORO_MODEL_NAME}`,
    license: LICENSE,
    files: [{ path, ...file }],
    kokoroVoice: {
      voice,
      apiId,
      displayName: `${given.charAt(0).toUpperCase()}${given.slice(1)} (${code.label}, Kokoro)`,
      language: code.language,
      espeakVoice: code.espeakVoice,
      dialect: code.dialect,
      gender,
      age: 'adult',
      model: KOKORO_MODEL_NAME,
      file: path,
    },
  };
}

export const KOKORO_MODELS: ReadonlyArray<KokoroModelEntry | KokoroVoiceEntry> = [
  MODEL,
  ...VOICES.map(([voice, apiId, sha256]) => kokoroVoiceEntry(voice, apiId, { url: hub(`voices/${voice}.bin`), sizeBytes: VOICE_BYTES, sha256 })),
];
