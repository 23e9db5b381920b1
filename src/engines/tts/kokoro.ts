/**
 * Kokoro-82M neural TTS (StyleTTS2 + iSTFTNet exported to ONNX) run with onnxruntime-node on the CPU.
 *
 * Front end, following the reference pipelines: text -> IPA from the shipped espeak-ng, IPA -> Kokoro's symbols with
 * the E2M tables of hexgrad/misaki (misaki/espeak.py: EspeakFallback for English, EspeakG2P for es/fr/pt-br), symbols
 * -> ids through tokenizer.json's vocabulary (unknown symbols dropped, as kokoro-onnx does), chunks of at most 510
 * tokens split at punctuation the way kokoro-onnx's _split_phonemes does, and per chunk the model's inputs as
 * kokoro-js builds them: input_ids [1, T+2] with the pad id 0 at both ends, style = the voice table's row
 * min(T, 509) (the table holds one style vector per token count), speed [1]. Output: float32 audio at 24 kHz.
 *
 * Japanese (dialect ja) has no espeak step: misaki's first-generation kana front end, src/engines/tts/kokoro-ja.ts,
 * reads the text through kuromoji (the voice's engine takes Japanese as written: readsJapanese).
 *
 * Departures: espeak-ng here gives IPA without tie marks, so the tables' tied pairs (a^ɪ, t^ʃ ...) are matched
 * wherever the two symbols are adjacent, and misaki's ə^l -> ᵊl is not applied (an untied ə l is an ordinary schwa
 * before l, as in "hello"); misaki's British e^ə -> ɛː, which its own order defeats, is applied first; a phrase longer
 * than 510 symbols, which kokoro-onnx truncates (dropping speech), is cut at its last space before the limit instead.
 *
 * Prosody: rate is Kokoro's own speed input (durations divide by it; pitch unchanged), hence nativeRate. The model has
 * no pitch input, so prosody.pitch / pitchRange are not applied (as with Piper); loudness is the pipeline's.
 */
import { readFile } from 'node:fs/promises';
import * as ort from 'onnxruntime-node';
import { z } from 'zod';
import { TaskFailure } from '../../domain/errors.js';
import type { AudioData } from '../../media/audio.js';
import type { EngineContext, EngineVoice, TtsEngine, TtsRequest } from '../../ports/engines.js';
import { MODEL_CATALOG, kokoroEntries, type KokoroModelEntry, type KokoroVoiceEntry, type ModelEntry } from '../../models/catalog.js';
import { KOKORO_DEFAULT_VOICES, type KokoroDialect } from '../../models/catalog-kokoro.js';
import { modelFilePath } from '../../models/download.js';
import { LoadOnce } from './load-once.js';
import { openVerifiedSession } from '../onnx-provider.js';
import { checkModel, describeCheck } from '../../models/installed.js';
import type { Phonemize } from './piper.js';
import { JapaneseReader, type JapaneseWord } from './japanese.js';
import { japaneseToKokoro } from './kokoro-ja.js';

/** Tokens per model call without the two pads: the graph's context is 512. */
export const KOKORO_MAX_TOKENS = 510;
export const KOKORO_STYLE_DIM = 256;
/** Rows of a voice table (voices/*.bin is float32 [510, 1, 256]). */
export const KOKORO_STYLE_ROWS = 510;

/** misaki EspeakFallback.E2M (English), tie marks removed; applied longest first. */
const EN_E2M: ReadonlyArray<readonly [string, string]> = [
  ['ʔˌn\u0329', 'tn'], ['ʔn\u0329', 'tn'], ['ʔn', 'tn'], ['ʔ', 't'],
  ['aɪ', 'I'], ['aʊ', 'W'], ['dʒ', 'ʤ'], ['eɪ', 'A'], ['e', 'A'], ['tʃ', 'ʧ'], ['ɔɪ', 'Y'],
  ['ʲo', 'jo'], ['ʲə', 'jə'], ['ʲ', ''], ['ɚ', 'əɹ'], ['r', 'ɹ'], ['x', 'k'], ['ç', 'k'], ['ɐ', 'ə'], ['ɬ', 'l'], ['\u0303', ''],
];
/** misaki EspeakG2P.E2M (other languages), tie marks removed; misaki applies them in key order. */
const OTHER_E2M: ReadonlyArray<readonly [string, string]> = [
  ['aɪ', 'I'], ['aʊ', 'W'], ['dz', 'ʣ'], ['dʒ', 'ʤ'], ['eɪ', 'A'], ['oʊ', 'O'], ['ss', 'S'], ['ts', 'ʦ'], ['tʃ', 'ʧ'], ['ɔɪ', 'Y'], ['əʊ', 'Q'],
];

function replaceAll(s: string, table: ReadonlyArray<readonly [string, string]>): string {
  let out = s;
  for (const [from, to] of table) out = out.split(from).join(to);
  return out;
}

/** Longest-first, one pass per table entry: the order misaki's sorted E2M gives (stable for equal lengths). */
const EN_E2M_ORDERED = [...EN_E2M].sort((a, b) => b[0].length - a[0].length);

/** espeak IPA (one sentence per line) -> Kokoro's phoneme symbols for a dialect. */
export function toKokoroPhonemes(ipa: string, dialect: KokoroDialect): string {
  let ps = ipa.replace(/\s*\n\s*/g, ' ').trim();
  if (dialect === 'en-us' || dialect === 'en-gb') {
    // misaki means British e^ə (SQUARE, "there") to become ɛː, but its table turns the e into A first, so the rule
    // never fires; applied first here, as intended (Kokoro's British lexicon writes that vowel ɛː).
    if (dialect === 'en-gb') ps = replaceAll(ps, [['eə', 'ɛː']]);
    ps = replaceAll(ps, EN_E2M_ORDERED);
    // A syllabic consonant (combining vertical line below) becomes schwa + consonant.
    ps = ps.replace(/(\S)\u0329/gu, 'ᵊ$1').replace(/\u0329/g, '');
    if (dialect === 'en-gb') {
      ps = replaceAll(ps, [['iə', 'ɪə'], ['əʊ', 'Q']]);
    } else {
      ps = replaceAll(ps, [['oʊ', 'O'], ['ɜːɹ', 'ɜɹ'], ['ɜː', 'ɜɹ'], ['ɪə', 'iə'], ['ː', '']]);
    }
    // Older espeak writes o where Kokoro's inventory has ɔ.
    return ps.replace(/o/g, 'ɔ');
  }
  return replaceAll(ps, OTHER_E2M).replace(/-/g, '');
}

/** Symbols -> ids through the vocabulary; symbols it lacks are dropped (kokoro-onnx's tokenizer does the same). */
export function kokoroTokens(phonemes: string, vocab: Readonly<Record<string, number>>): number[] {
  const ids: number[] = [];
  for (const ch of phonemes) {
    const id = vocab[ch];
    if (id !== undefined) ids.push(id);
  }
  return ids;
}

/** Only the symbols the vocabulary knows, so a chunk's length in characters is its length in tokens. */
function known(phonemes: string, vocab: Readonly<Record<string, number>>): string {
  return Array.from(phonemes).filter((ch) => vocab[ch] !== undefined).join('');
}

/** Cuts a phrase longer than the limit at its last space before it (a hard cut where there is none). */
function cutLong(part: string, max: number): string[] {
  const out: string[] = [];
  let rest = part;
  while (Array.from(rest).length > max) {
    const chars = Array.from(rest);
    const head = chars.slice(0, max).join('');
    const space = head.lastIndexOf(' ');
    const cut = space > 0 ? space : head.length;
    out.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest) out.push(rest);
  return out;
}

/**
 * kokoro-onnx's _split_phonemes: phrases split at . , ! ? ; (kept), packed into batches whose length plus a joining
 * space stays within `max`; punctuation joins its phrase without a space.
 */
export function splitKokoroPhonemes(phonemes: string, max = KOKORO_MAX_TOKENS): string[] {
  const batches: string[] = [];
  let current = '';
  const len = (s: string) => Array.from(s).length;
  for (const raw of phonemes.split(/([.,!?;])/)) {
    for (const part of cutLong(raw.trim(), max)) {
      if (!part) continue;
      if (len(current) + len(part) + 1 > max) {
        if (current.trim()) batches.push(current.trim());
        current = part;
      } else if ('.,!?;'.includes(part) && part.length === 1) {
        current += part;
      } else {
        if (current) current += ' ';
        current += part;
      }
    }
  }
  if (current.trim()) batches.push(current.trim());
  return batches;
}

/** The style vector for a chunk of `tokens` ids (pads not counted): row min(tokens, 509) of the voice table. */
export function styleRow(table: Float32Array, tokens: number): Float32Array {
  const row = Math.min(Math.max(tokens, 0), KOKORO_STYLE_ROWS - 1);
  return table.subarray(row * KOKORO_STYLE_DIM, (row + 1) * KOKORO_STYLE_DIM);
}

/** tokenizer.json (Hugging Face tokenizers format): only model.vocab is read. */
const TokenizerFile = z.object({ model: z.object({ vocab: z.record(z.string(), z.number().int().nonnegative()) }) });

interface LoadedModel {
  session: ort.InferenceSession;
  vocab: Record<string, number>;
  pad: number;
  idsName: string;
  outputName: string;
}

export interface KokoroEngineOptions {
  modelsDir: string;
  catalog?: readonly ModelEntry[];
  phonemize: Phonemize;
  /** Japanese words for the ja voices (kuromoji); by default a JapaneseReader of the engine's own. */
  readJapanese?: (text: string) => Promise<JapaneseWord[]>;
  intraOpThreads?: number;
  executionProviders?: readonly string[];
  /**
   * MODELS_AUTO_PULL: also list the catalog's voices whose files are not installed (missing or failing verification),
   * marked with the models to download first (EngineVoice.pullModels, fetched by src/kinds/tts/voice-models.ts on the
   * worker's event loop); off, only installed (verified) voices are offered. Their files are never opened before then.
   */
  listPullable?: boolean;
}

export class KokoroEngine implements TtsEngine {
  readonly id = 'kokoro';
  readonly nativeRate = true;
  readonly sampleRate = 24000;
  private readonly modelsDir: string;
  private readonly models: KokoroModelEntry[];
  private readonly voices: KokoroVoiceEntry[];
  private readonly phonemize: Phonemize;
  private readonly readJapanese: (text: string) => Promise<JapaneseWord[]>;
  private readonly intraOpThreads: number;
  private readonly executionProviders: readonly string[];
  private readonly listPullable: boolean;
  /** Per instance: one session per model, one style table per voice (src/engines/tts/load-once.ts). */
  private readonly sessions = new LoadOnce<LoadedModel>();
  private readonly tables = new LoadOnce<Float32Array>();

  constructor(opts: KokoroEngineOptions) {
    const { models, voices } = kokoroEntries(opts.catalog ?? MODEL_CATALOG);
    this.modelsDir = opts.modelsDir;
    this.models = models;
    this.voices = voices.filter((v) => models.some((m) => m.name === v.kokoroVoice.model));
    this.phonemize = opts.phonemize;
    if (opts.readJapanese) {
      this.readJapanese = opts.readJapanese;
    } else {
      const reader = new JapaneseReader();
      this.readJapanese = (text) => reader.words(text);
    }
    this.intraOpThreads = Math.max(1, Math.floor(opts.intraOpThreads ?? 1));
    this.executionProviders = opts.executionProviders ?? ['cpu'];
    this.listPullable = opts.listPullable ?? false;
  }

  /** Kokoro's Japanese voices read kanji themselves (kokoro-ja.ts), so the pipeline must not turn the text into kana. */
  readsJapanese(voice: EngineVoice): boolean {
    return this.voices.some((v) => v.name === voice.engineVoice && v.kokoroVoice.dialect === 'ja');
  }

  private async installed(entry: ModelEntry): Promise<boolean> {
    return (await checkModel(this.modelsDir, entry)).state === 'installed';
  }

  /**
   * Installed voices (model and style table verified); with listPullable every catalog voice, each marked with what
   * it still needs downloaded. Listed best first: the catalog's default voices (KOKORO_DEFAULT_VOICES, the best
   * graded of each accent and gender), then the others in catalog order, since a default voice is the list's first
   * installed neural voice of its language and gender (docs/api.md).
   */
  async listVoices(): Promise<EngineVoice[]> {
    const out: EngineVoice[] = [];
    const modelOk = new Map<string, boolean>();
    const rank = (e: KokoroVoiceEntry) => {
      const at = KOKORO_DEFAULT_VOICES.indexOf(e.kokoroVoice.voice);
      return at < 0 ? KOKORO_DEFAULT_VOICES.length : at;
    };
    // sort is stable: equal ranks keep the catalog's order.
    for (const entry of [...this.voices].sort((a, b) => rank(a) - rank(b))) {
      const v = entry.kokoroVoice;
      if (!modelOk.has(v.model)) modelOk.set(v.model, await this.installed(this.models.find((m) => m.name === v.model)!));
      const missing = [...(modelOk.get(v.model) ? [] : [v.model]), ...((await this.installed(entry)) ? [] : [entry.name])];
      if (missing.length > 0 && !this.listPullable) continue;
      out.push({
        key: `kokoro:${v.dialect}:${v.voice}`,
        engine: this.id,
        language: v.language,
        gender: v.gender,
        age: v.age,
        displayName: v.displayName,
        engineVoice: entry.name,
        apiId: v.apiId,
        neural: true,
        ...(missing.length > 0 ? { pullModels: missing } : {}),
      });
    }
    return out;
  }

  private async openModel(entry: KokoroModelEntry): Promise<LoadedModel> {
    const check = await checkModel(this.modelsDir, entry);
    if (check.state !== 'installed') {
      throw new TaskFailure(`Kokoro model ${entry.name} is not installed (${describeCheck(check) || 'missing'}; run: soundry models pull ${entry.name})`);
    }
    const tokenizerPath = modelFilePath(this.modelsDir, entry, { path: entry.kokoro.tokenizerFile });
    let vocab: Record<string, number>;
    try {
      vocab = TokenizerFile.parse(JSON.parse(await readFile(tokenizerPath, 'utf8'))).model.vocab;
    } catch (err) {
      throw new TaskFailure(`Kokoro model ${entry.name}: ${tokenizerPath} has no readable model.vocab (${(err as Error).message.split('\n')[0]})`);
    }
    const modelPath = modelFilePath(this.modelsDir, entry, { path: entry.kokoro.modelFile });
    const session = await openVerifiedSession(modelPath, this.executionProviders, this.intraOpThreads, `Kokoro model ${entry.name}`);
    // onnx-community names the ids input_ids and the audio waveform; kokoro-onnx's release files say tokens and audio.
    const idsName = ['input_ids', 'tokens'].find((n) => session.inputNames.includes(n));
    if (!idsName || !session.inputNames.includes('style') || !session.inputNames.includes('speed')) {
      await session.release();
      throw new TaskFailure(`Kokoro model ${entry.name}: ${modelPath} has inputs ${session.inputNames.join(', ')}, not input_ids, style and speed`);
    }
    const outputName = session.outputNames.find((n) => n === 'waveform' || n === 'audio') ?? session.outputNames[0]!;
    return { session, vocab, pad: vocab.$ ?? 0, idsName, outputName };
  }

  private async openTable(entry: KokoroVoiceEntry): Promise<Float32Array> {
    const check = await checkModel(this.modelsDir, entry);
    if (check.state !== 'installed') {
      throw new TaskFailure(`Kokoro voice ${entry.kokoroVoice.voice} is not installed (${describeCheck(check) || 'missing'}; run: soundry models pull ${entry.name})`);
    }
    const path = modelFilePath(this.modelsDir, entry, { path: entry.kokoroVoice.file });
    const bytes = await readFile(path);
    if (bytes.length !== KOKORO_STYLE_ROWS * KOKORO_STYLE_DIM * 4) {
      throw new TaskFailure(`Kokoro voice file ${path}: ${bytes.length} bytes, not a float32 [${KOKORO_STYLE_ROWS}, 1, ${KOKORO_STYLE_DIM}] table`);
    }
    // Copied into its own buffer: a Buffer may sit at an offset that Float32Array cannot view (alignment).
    const table = new Float32Array(bytes.length / 4);
    for (let k = 0; k < table.length; k++) table[k] = bytes.readFloatLE(k * 4);
    return table;
  }

  /** Releases every cached session (call on shutdown or before deleting model files). */
  async close(): Promise<void> {
    await this.tables.clear();
    for (const loaded of await this.sessions.clear()) await loaded.session.release();
  }

  /** One model call: ids padded at both ends, the style row for their count, the speed. */
  private async runChunk(model: LoadedModel, table: Float32Array, ids: number[], speed: number): Promise<Float32Array> {
    const padded = [model.pad, ...ids, model.pad];
    const feeds: Record<string, ort.Tensor> = {
      [model.idsName]: new ort.Tensor('int64', BigInt64Array.from(padded, (n) => BigInt(n)), [1, padded.length]),
      style: new ort.Tensor('float32', Float32Array.from(styleRow(table, ids.length)), [1, KOKORO_STYLE_DIM]),
      speed: new ort.Tensor('float32', Float32Array.of(speed), [1]),
    };
    const out = (await model.session.run(feeds))[model.outputName];
    if (!out || out.type !== 'float32') throw new TaskFailure('Kokoro model returned no float32 audio');
    return out.data as Float32Array;
  }

  async synthesize(request: TtsRequest, ctx: EngineContext): Promise<AudioData> {
    const entry = this.voices.find((v) => v.name === request.voice.engineVoice);
    if (!entry) throw new TaskFailure(`unknown Kokoro voice: ${request.voice.engineVoice}`);
    const speed = request.prosody.rate;
    if (!(speed > 0) || !Number.isFinite(speed)) throw new TaskFailure(`invalid speaking rate: ${speed}`);
    const modelEntry = this.models.find((m) => m.name === entry.kokoroVoice.model)!;
    const model = await this.sessions.get(modelEntry.name, () => this.openModel(modelEntry));
    const table = await this.tables.get(entry.name, () => this.openTable(entry));
    ctx.signal.throwIfAborted();

    const { dialect, espeakVoice } = entry.kokoroVoice;
    const text = request.text.trim();
    const raw = dialect === 'ja' ? await japaneseToKokoro(text, this.readJapanese) : toKokoroPhonemes(await this.phonemize(text, espeakVoice), dialect);
    const phonemes = known(raw, model.vocab);
    const chunks = splitKokoroPhonemes(phonemes);
    const pieces: Float32Array[] = [];
    for (let i = 0; i < chunks.length; i++) {
      ctx.signal.throwIfAborted();
      const ids = kokoroTokens(chunks[i]!, model.vocab);
      if (ids.length > 0) pieces.push(await this.runChunk(model, table, ids, speed));
      ctx.onProgress((i + 1) / chunks.length);
    }
    ctx.signal.throwIfAborted();
    const samples = new Float32Array(pieces.reduce((n, p) => n + p.length, 0));
    let offset = 0;
    for (const p of pieces) {
      samples.set(p, offset);
      offset += p.length;
    }
    return { sampleRate: this.sampleRate, channels: [samples] };
  }
}
