/**
 * The registry of downloadable models. Every file carries the official URL, its size and a
 * published checksum; a model whose checksum could not be found is left out rather than guessed.
 *
 * Piper voices: sizes and md5 digests are copied from the official piper-voices `voices.json`
 * (the copy rhasspy embeds in rhasspy/wyoming-piper, which downloads from the same v1.0.0 tag). The md5 stays on every
 * file; a sha256 is added where one is published, and download/verification then use the sha256. Piper does not
 * publish a sha256 list itself; the Hugging Face LFS pointer of each `.onnx` carries its sha256 (`oid sha256:`), and
 * the ones below are that oid as public projects pin it (found with the search tools; the numbers are the ids of the
 * indexed files, readable with read_file), each at the catalog's size:
 * - [T] a supply-chain pin table stating its digests are "the rhasspy/piper-voices@v1.0.0 ... HF tree API `lfs.oid`"
 *   (index 66496723525): ryan, huayan, davefx, sharvard, gilles, siwis, thorsten, faber, edresson, irina;
 * - [V] download manifests that fetch the `resolve/v1.0.0/...` URL and check the sha256: faber and edresson, onnx and
 *   json (66084421785), huayan onnx and json (3660545142), kareem onnx and json ("at v1.0.0", 67524750461);
 * - [M] the same digests pinned by independent projects at later piper-voices revisions (39ab474…, 1162a91…, c10ece1…,
 *   0d907f1…) with the v1.0.0 file size: lessac (60918823777, 70949269742, 69251916653), denis (70428657344,
 *   61399989967, 70915610711), kareem (69251916653, 59758242467), and a second source for each [T] digest (e.g.
 *   70949269742, 69251916653, 71244678634).
 * A `.onnx.json` (a plain git file, no LFS oid) gets a sha256 only where the pinned copy has the v1.0.0 size and a
 * source pins it; en_US-lessac-medium.onnx.json was also measured here on the shared-corpus copy, whose md5 is the
 * published one. Left with md5 only: de_DE-kerstin-low (no published sha256 found), and the configs of sharvard and
 * gilles (digests found only for later revisions, sizes unconfirmed). Where only md5 exists it still rules out LFS
 * pointers, truncation and foreign files.
 */
import type { AgeGroup, Gender } from '../ports/engines.js';
import { ENHANCE_MODELS } from './catalog-enhance.js';
import { DEREVERB_MODELS } from './catalog-dereverb.js';
import { ASR_MODELS } from './catalog-asr.js';
import { SEPARATION_MODELS } from './catalog-separation.js';
import { KOKORO_MODELS, type KokoroModelEntry, type KokoroVoiceEntry } from './catalog-kokoro.js';

export type { KokoroModelEntry, KokoroVoiceEntry } from './catalog-kokoro.js';
import { LLM_MODELS } from './catalog-llm.js';

export type ModelKind = 'tts' | 'separation' | 'enhance' | 'vad' | 'asr' | 'llm';

export interface ModelFile {
  /** Relative path inside MODELS_DIR/<model name>/. */
  path: string;
  /** Official download location. */
  url: string;
  sha256?: string;
  md5?: string;
  sizeBytes: number;
}

interface BaseModelEntry {
  name: string;
  kind: ModelKind;
  description: string;
  license: string;
  files: ModelFile[];
}

/** One API voice a Piper model provides (multi-speaker models may provide several). */
export interface PiperApiVoice {
  /** Stable numeric API voice id, written here so it never depends on list order. */
  apiId: number;
  displayName: string;
  gender: Gender;
  age: AgeGroup;
  /** Speaker index for multi-speaker models (the `sid` input); absent for single-speaker ones. */
  speakerId?: number;
  /** How the gender was decided, so a reviewer can check it. */
  genderSource: string;
}

export interface PiperModelMeta {
  /** Piper's own voice key, e.g. en_US-lessac-medium. */
  key: string;
  /** Spec language key: zh, en, ar, ru, es, fr, pt, de, ko, ja, zh_yue. */
  language: string;
  /** Piper locale, e.g. en_US. */
  locale: string;
  quality: 'x_low' | 'low' | 'medium' | 'high';
  sampleRate: number;
  /** espeak-ng voice from the model's .onnx.json `espeak.voice`; the installed config wins at runtime. */
  espeakVoice: string;
  modelFile: string;
  configFile: string;
  voices: PiperApiVoice[];
}

export interface TtsModelEntry extends BaseModelEntry {
  kind: 'tts';
  engine: 'piper';
  piper: PiperModelMeta;
}

/** Separation, enhancement, VAD, ASR and LLM models: metadata is engine-specific and added with their engines. */
export interface OtherModelEntry extends BaseModelEntry {
  kind: 'separation' | 'enhance' | 'vad' | 'asr' | 'llm';
  meta?: Record<string, unknown>;
}

export type ModelEntry = TtsModelEntry | KokoroModelEntry | KokoroVoiceEntry | OtherModelEntry;

const PIPER_BASE = 'https://huggingface.co/rhasspy/piper-voices/resolve/v1.0.0';
const PIPER_LICENSE =
  'Piper voice (MIT code); the training dataset license is in the voice MODEL_CARD at rhasspy/piper-voices';

interface PiperRow {
  key: string;
  language: string;
  espeakVoice: string;
  onnx: [sizeBytes: number, md5: string];
  json: [sizeBytes: number, md5: string];
  /** Published sha256 of the .onnx (its Hugging Face LFS oid), where one was found (sources in the header). */
  onnxSha256?: string;
  /** sha256 of the .onnx.json, where one was published for the v1.0.0 file (or measured on a copy matching its md5). */
  jsonSha256?: string;
  voices: PiperApiVoice[];
}

/** URL path segments are percent-encoded: some voice names are not ASCII (pt_PT-tugão). */
function piperUrl(parts: string[]): string {
  return `${PIPER_BASE}/${parts.map(encodeURIComponent).join('/')}`;
}

function piperEntry(row: PiperRow): TtsModelEntry {
  const [locale, dataset, quality] = row.key.split('-') as [string, string, PiperModelMeta['quality']];
  const family = locale.split('_')[0]!;
  const dir = [family, locale, dataset, quality];
  const modelFile = `${row.key}.onnx`;
  const configFile = `${row.key}.onnx.json`;
  return {
    name: `piper-${row.key}`,
    kind: 'tts',
    engine: 'piper',
    description: `Piper neural voice ${dataset} (${locale}, ${quality} quality)`,
    license: PIPER_LICENSE,
    files: [
      { path: modelFile, url: piperUrl([...dir, modelFile]), sizeBytes: row.onnx[0], md5: row.onnx[1], ...(row.onnxSha256 ? { sha256: row.onnxSha256 } : {}) },
      { path: configFile, url: piperUrl([...dir, configFile]), sizeBytes: row.json[0], md5: row.json[1], ...(row.jsonSha256 ? { sha256: row.jsonSha256 } : {}) },
    ],
    piper: {
      key: row.key,
      language: row.language,
      locale,
      quality,
      // Piper trains x_low and low voices at 16 kHz, medium and high at 22.05 kHz.
      sampleRate: quality === 'x_low' || quality === 'low' ? 16000 : 22050,
      espeakVoice: row.espeakVoice,
      modelFile,
      configFile,
      voices: row.voices,
    },
  };
}

function voice(apiId: number, displayName: string, gender: Gender, genderSource: string, speakerId?: number): PiperApiVoice {
  return { apiId, displayName, gender, age: 'adult', genderSource, ...(speakerId === undefined ? {} : { speakerId }) };
}

// Piper covers en, de, fr, es, pt, ru, ar and zh (Mandarin) among the spec's languages; it has no
// ko, ja or zh_yue voices. Genders come from the dataset's documented speaker or the speaker_id_map.
const PIPER_ROWS: PiperRow[] = [
  {
    key: 'en_US-lessac-medium', language: 'en', espeakVoice: 'en-us',
    onnx: [63201294, '2fc642b535197b6305c7c8f92dc8b24f'], json: [4885, 'c1f2b7bddefe113f3255ff9ef234cfd3'],
    // sha256: [M]
    onnxSha256: '5efe09e69902187827af646e1a6e9d269dee769f9877d17b16b1b46eeaaf019f',
    jsonSha256: 'efe19c417bed055f2d69908248c6ba650fa135bc868b0e6abb3da181dab690a0',
    voices: [voice(5001, 'Lessac (US English)', 'female', 'Lessac Blizzard 2013 corpus: one female speaker')],
  },
  {
    key: 'en_US-ryan-medium', language: 'en', espeakVoice: 'en-us',
    onnx: [63201294, '8f06d3aff8ded5a7f13f907e6bec32ac'], json: [4883, 'f173a2b5202b3e4128ccc3ed8195306c'],
    // sha256: [T]; json [M] (70949269742, 59641219791)
    onnxSha256: 'abf4c274862564ed647ba0d2c47f8ee7c9b717d27bdad9219100eb310db4047a',
    jsonSha256: '44034c056cb15681b2ad494307c7f3f2e4499d1253c700c711fa0a4607ffe78d',
    voices: [voice(5002, 'Ryan (US English)', 'male', 'male speaker in the Piper samples; male name')],
  },
  {
    key: 'de_DE-thorsten-medium', language: 'de', espeakVoice: 'de',
    onnx: [63201294, 'a129b00fb3078df43c96bab6c94535c0'], json: [4819, '843a7bd7272724f750534dd5a26d1aad'],
    // sha256: [T]; json [M] (70949269742, 54651488430)
    onnxSha256: '7e64762d8e5118bb578f2eea6207e1a35a8e0c30595010b666f983fc87bb7819',
    jsonSha256: '974adee790533adb273a1ac88f49027d2a1b8f0f2cf4905954a4791e79264e85',
    voices: [voice(5003, 'Thorsten (German)', 'male', 'Thorsten-Voice dataset: Thorsten Müller, male')],
  },
  {
    key: 'de_DE-kerstin-low', language: 'de', espeakVoice: 'de',
    onnx: [63104526, '1d5e5788cfddb04cbb34418f2841931e'], json: [4158, 'a96995af6c1c5b37ed3d62b5107e1d9a'],
    voices: [voice(5004, 'Kerstin (German)', 'female', 'female speaker in the Piper samples; female name')],
  },
  {
    key: 'fr_FR-siwis-medium', language: 'fr', espeakVoice: 'fr',
    onnx: [63201294, '20e876e8c839e9b11a26085858f2300c'], json: [4875, 'a407e7e6901feb79c2ea2a5466076cce'],
    // sha256: [T]; json [M] (70949269742, 62193283998)
    onnxSha256: '641d1ab097da2b81128c076810edb052b385decc8be3381814802a64a73baf99',
    jsonSha256: '39479916c2db192b5ac9764daddd0c744d83e023ad890c6976c0633ae4df8959',
    voices: [voice(5005, 'Siwis (French)', 'female', 'SIWIS French corpus: one female speaker')],
  },
  {
    key: 'fr_FR-gilles-low', language: 'fr', espeakVoice: 'fr',
    onnx: [63104526, 'f984386d1f0927597f09a3ec10b11b5d'], json: [4158, '38b1775fef8b9de50f15f63c5d8b8643'],
    // sha256: [T]; onnx also 69792845090, 69114592897
    onnxSha256: '5cd711846720e261c2a176f6924c198a7424d0a75dd4b0a5357a5fb9cb739285',
    voices: [voice(5006, 'Gilles (French)', 'male', 'male speaker in the Piper samples; male name')],
  },
  {
    key: 'es_ES-davefx-medium', language: 'es', espeakVoice: 'es',
    onnx: [63201294, 'dc515cd4ecc5f6f72fe14a941188fc9c'], json: [4817, 'dd157b5eaf6930bf949cf416d9a9307a'],
    // sha256: [T]; json [M] (70949269742, 62193283998)
    onnxSha256: '6658b03b1a6c316ee4c265a9896abc1393353c2d9e1bca7d66c2c442e222a917',
    jsonSha256: '0e0dda87c732f6f38771ff274a6380d9252f327dca77aa2963d5fbdf9ec54842',
    voices: [voice(5007, 'DaveFX (Spanish)', 'male', 'male speaker (David) in the Piper samples')],
  },
  {
    key: 'es_ES-sharvard-medium', language: 'es', espeakVoice: 'es',
    onnx: [76733615, '77e6f9c26e92799fb04bb90b46bf1834'], json: [4903, 'e49cab310ce362145f7d94b347c291ff'],
    // sha256: [T]; onnx also 58508980131, 69681142208
    onnxSha256: '40febfb1679c69a4505ff311dc136e121e3419a13a290ef264fdf43ddedd0fb1',
    voices: [voice(5008, 'Sharvard F (Spanish)', 'female', 'speaker_id_map {"M":0,"F":1}: speaker F', 1)],
  },
  {
    key: 'pt_BR-faber-medium', language: 'pt', espeakVoice: 'pt-br',
    onnx: [63201294, 'e0724a2f07965f6523d2a1e96b488a4c'], json: [4855, 'a1258e1e113c47d9a1486a9bef1daab4'],
    // sha256: [T], [V]
    onnxSha256: '858555e3a064209c57088fe6bd70c4c3dc54d03eaa00c45d5ecaf43a33f95aa7',
    jsonSha256: '7e694de195ae3fc36dd732c445eb04fb49b649854893cb5506b978f0d50a1d6f',
    voices: [voice(5009, 'Faber (Brazilian Portuguese)', 'male', 'male speaker in the Piper samples')],
  },
  {
    key: 'pt_BR-edresson-low', language: 'pt', espeakVoice: 'pt-br',
    onnx: [63104526, '53e365c040dd07890fe1855b64c7cc58'], json: [4168, '806966b457e27c01d9b8eed2bc76a185'],
    // sha256: [T], [V]
    onnxSha256: 'de4cecee38b30bb1a6378a337af605d59f0c377df702c6a6752870db8991cd84',
    jsonSha256: 'f138992d2e777d1e3aa0bbb14c2d324307b0f342c1bcf20978765b3bea506c56',
    voices: [voice(5010, 'Edresson (Brazilian Portuguese)', 'male', 'TTS-Portuguese corpus: its author, male')],
  },
  {
    key: 'ru_RU-irina-medium', language: 'ru', espeakVoice: 'ru',
    onnx: [63201294, '21fbe77fdc68bdc35d7adb6bf4f52199'], json: [4765, 'e239bb7f22d5de4a44ec6b1cb6c06bb5'],
    // sha256: [T]; json [M] (57459364481, 70091974535)
    onnxSha256: '8ff38212d23da300bbe3705c645e6e5b9475f0bfde01558eb17813e22acaaaaa',
    jsonSha256: 'c2ec28bb38e2b59e93b959b3e40348c1afebbd272f30fed5d41205d08e98a9d7',
    voices: [voice(5011, 'Irina (Russian)', 'female', 'female speaker in the Piper samples; female name')],
  },
  {
    key: 'ru_RU-denis-medium', language: 'ru', espeakVoice: 'ru',
    onnx: [63201294, '76c2f14e521fef3ed574f97ad492728e'], json: [4823, 'e3df5957c07647cab05cf9910ef3ede0'],
    // sha256: [M]
    onnxSha256: '15fab56e11a097858ee115545d0f697fc2a316c41a291a5362349fb870411b0a',
    jsonSha256: '831c860dac0b5073eaa81610a0a638ec23d90a6cf8e5f871b4485c2cec3767c8',
    voices: [voice(5012, 'Denis (Russian)', 'male', 'male speaker in the Piper samples; male name')],
  },
  {
    key: 'ar_JO-kareem-medium', language: 'ar', espeakVoice: 'ar',
    onnx: [63201294, 'c0697df8a7fb180079cc5ac523f91a8e'], json: [5024, 'dd70b31eb5a395907241b1e5367ace3a'],
    // sha256: [V], [M]
    onnxSha256: '9e95cab07b679da603bba17c4dec7ab3111320571964ee95c0379603c086491e',
    jsonSha256: 'ea6d9b9d9076dbdb6bf5c98c6a141ef154959d2359709b37855727964e7d6c4d',
    voices: [voice(5013, 'Kareem (Arabic)', 'male', 'male speaker in the Piper samples; male name')],
  },
  {
    key: 'zh_CN-huayan-medium', language: 'zh', espeakVoice: 'cmn',
    onnx: [63201294, '40cdb7930ff91b81574d5f0489e076ea'], json: [4822, '1fda3ec1d0d3a5a74064397ea8fe0af0'],
    // sha256: [T], [V]
    onnxSha256: '9929917bf8cabb26fd528ea44d3a6699c11e87317a14765312420be230be0f3d',
    jsonSha256: 'd521dc45504a8ccc99e325822b35946dd701840bfb07e3dbb31a40929ed6a82b',
    voices: [voice(5014, 'Huayan (Mandarin)', 'female', 'huayan corpus: one female speaker')],
  },
];

/** The catalog; immutable data, callers pass it (or a test subset) explicitly. */
export const MODEL_CATALOG: readonly ModelEntry[] = Object.freeze([
  ...PIPER_ROWS.map(piperEntry),
  ...KOKORO_MODELS,
  ...ENHANCE_MODELS,
  ...DEREVERB_MODELS,
  ...ASR_MODELS,
  ...SEPARATION_MODELS,
  ...LLM_MODELS,
]);

export function findModel(name: string, catalog: readonly ModelEntry[] = MODEL_CATALOG): ModelEntry | undefined {
  return catalog.find((m) => m.name === name);
}

export function piperModels(catalog: readonly ModelEntry[] = MODEL_CATALOG): TtsModelEntry[] {
  return catalog.filter((m): m is TtsModelEntry => m.kind === 'tts' && m.engine === 'piper');
}

/** Kokoro's model entries and voice entries (src/models/catalog-kokoro.ts). */
export function kokoroEntries(catalog: readonly ModelEntry[] = MODEL_CATALOG): { models: KokoroModelEntry[]; voices: KokoroVoiceEntry[] } {
  return {
    models: catalog.filter((m): m is KokoroModelEntry => m.kind === 'tts' && m.engine === 'kokoro'),
    voices: catalog.filter((m): m is KokoroVoiceEntry => m.kind === 'tts' && m.engine === 'kokoro-voice'),
  };
}

export function modelSizeBytes(entry: ModelEntry): number {
  return entry.files.reduce((sum, f) => sum + f.sizeBytes, 0);
}
