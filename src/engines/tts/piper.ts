/**
 * Piper neural TTS (VITS exported to ONNX) run with onnxruntime-node on the CPU.
 * Text -> IPA comes from an injected phonemizer (espeak-ng), IPA -> ids follows Piper exactly.
 *
 * Prosody: rate via length_scale (pitch-preserving, hence nativeRate), energy as gain. VITS has no
 * pitch input and no resample-free pitch shift is cheap, so prosody.pitch / pitchRange are not
 * applied here (documented limitation).
 */
import { readFile } from 'node:fs/promises';
import * as ort from 'onnxruntime-node';
import { TaskFailure } from '../../domain/errors.js';
import type { AudioData } from '../../media/audio.js';
import type { EngineContext, EngineVoice, TtsEngine, TtsRequest } from '../../ports/engines.js';
import { MODEL_CATALOG, piperModels, type ModelEntry, type TtsModelEntry } from '../../models/catalog.js';
import { modelFilePath } from '../../models/download.js';
import { LoadOnce } from './load-once.js';
import { openVerifiedSession } from '../onnx-provider.js';
import { checkModel, describeCheck } from '../../models/installed.js';

/** Text -> IPA phonemes for an espeak-ng voice; one sentence per line when it splits sentences. */
export type Phonemize = (text: string, espeakVoice: string) => Promise<string>;

export interface PiperEngineOptions {
  modelsDir: string;
  catalog?: readonly ModelEntry[];
  phonemize: Phonemize;
  /** onnxruntime intra-op threads per session (1 is usually fastest for short sentences). */
  intraOpThreads?: number;
  /** Silence between sentences of one request, before rate scaling (Piper's default is 0.2 s). */
  sentenceSilenceSeconds?: number;
  /** ONNX_EXECUTION_PROVIDER's resolved providers (default CPU), the same choice as separation's. */
  executionProviders?: readonly string[];
  /**
   * MODELS_AUTO_PULL: also list the catalog's voices that are not installed (missing or failing verification), marked
   * with the model to download first (EngineVoice.pullModels). Their files are never opened until a pull verified them.
   */
  listPullable?: boolean;
}

/** The keys of a Piper `.onnx.json` this engine reads. */
export interface PiperVoiceConfig {
  audio: { sample_rate: number; quality?: string };
  espeak?: { voice?: string };
  inference?: { noise_scale?: number; length_scale?: number; noise_w?: number };
  phoneme_type?: 'espeak' | 'text';
  phoneme_id_map: Record<string, number[]>;
  phoneme_map?: Record<string, string[]>;
  num_speakers?: number;
  speaker_id_map?: Record<string, number>;
}

interface LoadedVoice {
  session: ort.InferenceSession;
  config: PiperVoiceConfig;
  hasSid: boolean;
  outputName: string;
}

const BOS = '^';
const EOS = '$';
const PAD = '_';
/** Peak after normalization: Piper normalizes to full scale; a little headroom for later DSP. */
const PEAK = 0.95;

/**
 * IPA -> Piper ids: BOS, then each codepoint (NFD, as piper-phonemize decomposes) followed by PAD,
 * then EOS. Codepoints missing from the map are skipped, as Piper does.
 */
export function phonemesToIds(
  phonemes: string,
  idMap: Record<string, number[]>,
  phonemeMap: Record<string, string[]> = {},
): { ids: number[]; mapped: number; missing: string[] } {
  const pad = idMap[PAD] ?? [];
  const ids: number[] = [...(idMap[BOS] ?? []), ...pad];
  const missing: string[] = [];
  let mapped = 0;
  // The config's optional phoneme_map rewrites a phoneme into others before id lookup (usually empty).
  const codepoints = Array.from(phonemes.normalize('NFD')).flatMap((cp) => phonemeMap[cp] ?? [cp]);
  for (const cp of codepoints) {
    const cpIds = idMap[cp];
    if (!cpIds) {
      missing.push(cp);
      continue;
    }
    ids.push(...cpIds, ...pad);
    mapped++;
  }
  ids.push(...(idMap[EOS] ?? []));
  return { ids, mapped, missing };
}

/** engineVoice is `<model name>` or `<model name>#<speaker id>` for multi-speaker models. */
export function parseEngineVoice(engineVoice: string): { model: string; speakerId?: number } {
  const hash = engineVoice.lastIndexOf('#');
  if (hash < 0) return { model: engineVoice };
  const speakerId = Number(engineVoice.slice(hash + 1));
  if (!Number.isInteger(speakerId) || speakerId < 0) return { model: engineVoice };
  return { model: engineVoice.slice(0, hash), speakerId };
}

export class PiperEngine implements TtsEngine {
  readonly id = 'piper';
  readonly nativeRate = true;
  private readonly modelsDir: string;
  private readonly models: TtsModelEntry[];
  private readonly phonemize: Phonemize;
  private readonly intraOpThreads: number;
  private readonly sentenceSilenceSeconds: number;
  private readonly executionProviders: readonly string[];
  private readonly listPullable: boolean;
  /** Per instance, keyed by model name (src/engines/tts/load-once.ts). */
  private readonly sessions = new LoadOnce<LoadedVoice>();

  constructor(opts: PiperEngineOptions) {
    this.modelsDir = opts.modelsDir;
    this.models = piperModels(opts.catalog ?? MODEL_CATALOG);
    this.phonemize = opts.phonemize;
    this.intraOpThreads = Math.max(1, Math.floor(opts.intraOpThreads ?? 1));
    this.sentenceSilenceSeconds = Math.max(0, opts.sentenceSilenceSeconds ?? 0.2);
    this.executionProviders = opts.executionProviders ?? ['cpu'];
    this.listPullable = opts.listPullable ?? false;
  }

  private paths(entry: TtsModelEntry): { model: string; config: string } {
    return {
      model: modelFilePath(this.modelsDir, entry, { path: entry.piper.modelFile }),
      config: modelFilePath(this.modelsDir, entry, { path: entry.piper.configFile }),
    };
  }

  /** Installed means verified: both files at the catalog's size with a matching checksum (src/models/installed.ts). */
  private async installed(entry: TtsModelEntry): Promise<boolean> {
    return (await checkModel(this.modelsDir, entry)).state === 'installed';
  }

  /**
   * Installed Piper voices: an LFS pointer, a truncated or a foreign file never makes its voice speakable. With
   * listPullable, the others are listed too, carrying the model a task must download (and verify) first.
   */
  async listVoices(): Promise<EngineVoice[]> {
    const voices: EngineVoice[] = [];
    for (const entry of this.models) {
      const installed = await this.installed(entry);
      if (!installed && !this.listPullable) continue;
      for (const v of entry.piper.voices) {
        const speaker = v.speakerId === undefined ? '' : `#${v.speakerId}`;
        voices.push({
          key: `piper:${entry.piper.key}${v.speakerId === undefined ? '' : `:${v.speakerId}`}`,
          engine: this.id,
          language: entry.piper.language,
          gender: v.gender,
          age: v.age,
          displayName: v.displayName,
          engineVoice: `${entry.name}${speaker}`,
          apiId: v.apiId,
          neural: true,
          ...(installed ? {} : { pullModels: [entry.name] }),
        });
      }
    }
    return voices;
  }

  private async open(entry: TtsModelEntry): Promise<LoadedVoice> {
    const check = await checkModel(this.modelsDir, entry);
    if (check.state !== 'installed') {
      throw new TaskFailure(`Piper voice ${entry.name} is not installed (${describeCheck(check)}; run: soundry models pull ${entry.name})`);
    }
    const p = this.paths(entry);
    let config: PiperVoiceConfig;
    try {
      config = JSON.parse(await readFile(p.config, 'utf8')) as PiperVoiceConfig;
    } catch (err) {
      throw new TaskFailure(`Piper voice ${entry.name}: unreadable config (${(err as Error).message})`);
    }
    if (!config.phoneme_id_map || !(config.audio?.sample_rate > 0)) {
      throw new TaskFailure(`Piper voice ${entry.name}: config lacks phoneme_id_map or audio.sample_rate`);
    }
    const session = await openVerifiedSession(p.model, this.executionProviders, this.intraOpThreads, `Piper voice ${entry.name}`);
    return {
      session,
      config,
      hasSid: session.inputNames.includes('sid'),
      outputName: session.outputNames.includes('output') ? 'output' : session.outputNames[0]!,
    };
  }

  /** Releases every cached session (call on shutdown or before deleting model files). */
  async close(): Promise<void> {
    for (const loaded of await this.sessions.clear()) await loaded.session.release();
  }

  private async runIds(voice: LoadedVoice, ids: number[], lengthScale: number, speakerId: number): Promise<Float32Array> {
    const inf = voice.config.inference ?? {};
    const feeds: Record<string, ort.Tensor> = {
      input: new ort.Tensor('int64', BigInt64Array.from(ids, (n) => BigInt(n)), [1, ids.length]),
      input_lengths: new ort.Tensor('int64', BigInt64Array.of(BigInt(ids.length)), [1]),
      scales: new ort.Tensor('float32', Float32Array.of(inf.noise_scale ?? 0.667, lengthScale, inf.noise_w ?? 0.8), [3]),
    };
    if (voice.hasSid) feeds.sid = new ort.Tensor('int64', BigInt64Array.of(BigInt(speakerId)), [1]);
    const out = (await voice.session.run(feeds))[voice.outputName];
    // Output is [1,1,T] or [1,1,1,T]: either way the data is the T samples.
    if (!out || out.type !== 'float32') throw new TaskFailure('Piper model returned no float32 audio', true);
    return out.data as Float32Array;
  }

  async synthesize(request: TtsRequest, ctx: EngineContext): Promise<AudioData> {
    const { model, speakerId } = parseEngineVoice(request.voice.engineVoice);
    const entry = this.models.find((m) => m.name === model);
    if (!entry) throw new TaskFailure(`unknown Piper voice: ${request.voice.engineVoice}`);
    const rate = request.prosody.rate;
    if (!(rate > 0) || !Number.isFinite(rate)) throw new TaskFailure(`invalid speaking rate: ${rate}`);

    const voice = await this.sessions.get(entry.name, () => this.open(entry));
    ctx.signal.throwIfAborted();
    const sampleRate = voice.config.audio.sample_rate;
    const sid = speakerId ?? entry.piper.voices[0]?.speakerId ?? 0;
    if (voice.hasSid && sid >= (voice.config.num_speakers ?? 1)) {
      throw new TaskFailure(`Piper voice ${entry.name} has no speaker ${sid}`);
    }
    // Rate scales durations only; clamped to what VITS duration prediction handles sensibly.
    const lengthScale = (voice.config.inference?.length_scale ?? 1) / Math.min(4, Math.max(0.25, rate));

    const text = request.text.trim();
    const phonemes =
      voice.config.phoneme_type === 'text'
        ? text
        : await this.phonemize(text, voice.config.espeak?.voice ?? entry.piper.espeakVoice);
    const sentences = phonemes.split(/\r?\n/).map((s) => s.trim()).filter((s) => s.length > 0);

    const pieces: Float32Array[] = [];
    const gap = new Float32Array(Math.round((this.sentenceSilenceSeconds * sampleRate) / rate));
    for (let i = 0; i < sentences.length; i++) {
      ctx.signal.throwIfAborted();
      const { ids, mapped } = phonemesToIds(sentences[i]!, voice.config.phoneme_id_map, voice.config.phoneme_map);
      if (mapped > 0) {
        if (pieces.length > 0 && gap.length > 0) pieces.push(gap);
        pieces.push(await this.runIds(voice, ids, lengthScale, sid));
      }
      ctx.onProgress((i + 1) / sentences.length);
    }
    ctx.signal.throwIfAborted();
    return { sampleRate, channels: [finish(pieces, request.prosody.energy)] };
  }
}

/** Concatenates, peak-normalizes like Piper, then applies energy as gain with clipping. */
function finish(pieces: Float32Array[], energy: number): Float32Array {
  const total = pieces.reduce((n, p) => n + p.length, 0);
  const out = new Float32Array(total);
  let offset = 0;
  let peak = 0;
  for (const p of pieces) {
    out.set(p, offset);
    offset += p.length;
    for (let k = 0; k < p.length; k++) peak = Math.max(peak, Math.abs(p[k]!));
  }
  const gain = (peak > 1e-8 ? PEAK / peak : 0) * (Number.isFinite(energy) && energy >= 0 ? energy : 1);
  for (let k = 0; k < total; k++) out[k] = Math.max(-1, Math.min(1, out[k]! * gain));
  return out;
}
