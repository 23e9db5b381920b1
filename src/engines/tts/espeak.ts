import type { AudioData } from '../../media/audio.js';
import type { AgeGroup, EngineContext, EngineVoice, Gender, TtsEngine, TtsRequest } from '../../ports/engines.js';
import { SonicStretcher } from './sonic.js';
import { splitScriptRuns } from './script-runs.js';
import { splitText } from './text.js';

/** The part of the Emscripten build we use (see the package's espeak-ng.js). */
interface EspeakWorker {
  set_voice(name: string): number;
  set_rate(wpm: number): number;
  set_pitch(pitch: number): number;
  set_range(range: number): number;
  set_volume(volume: number): number;
  synthesize(text: string, cb: (samples: Int16Array, events: unknown[]) => number | boolean | void): void;
  synthesize_ipa(text: string): { code: number; ipa: string };
}
interface EspeakModule {
  eSpeakNGWorker: new () => EspeakWorker;
}

const SAMPLE_RATE = 22050;
const DEFAULT_WPM = 175;
const MIN_WPM = 80;
const MAX_WPM = 450;

/**
 * espeak's duration is not proportional to wpm (it speeds up pauses and phonemes differently, and
 * differently per language). Measured speed factors at 175 wpm = 1 (average of en, de, ja, zh):
 * the curve picks the wpm, and a measured residual (below) fixes the rest.
 */
const SPEED_TO_WPM: Array<[number, number]> = [
  [0.47, 80], [0.56, 100], [0.74, 130], [1, 175], [1.33, 230], [1.5, 260], [1.75, 300], [2.02, 350], [2.34, 400], [2.65, 450],
];

function wpmForSpeed(speed: number): number {
  const first = SPEED_TO_WPM[0]!;
  const last = SPEED_TO_WPM[SPEED_TO_WPM.length - 1]!;
  if (speed <= first[0]) return MIN_WPM;
  if (speed >= last[0]) return MAX_WPM;
  for (let i = 1; i < SPEED_TO_WPM.length; i++) {
    const [s1, w1] = SPEED_TO_WPM[i]!;
    const [s0, w0] = SPEED_TO_WPM[i - 1]!;
    if (speed <= s1) return Math.round(w0 + ((speed - s0) / (s1 - s0)) * (w1 - w0));
  }
  return MAX_WPM;
}

/** Pitch multiplier -> espeak pitch 0..99 (50 = voice default); measured: +25 is about x1.27, -25 about x0.82. */
export function espeakPitch(multiplier: number): number {
  const lnm = Math.log(Math.max(0.1, multiplier));
  const value = 50 + (lnm >= 0 ? lnm / 0.0096 : lnm / 0.0079);
  return Math.max(0, Math.min(99, Math.round(value)));
}

export function espeakRange(multiplier: number): number {
  return Math.max(0, Math.min(99, Math.round(50 * multiplier)));
}

interface VariantSpec {
  variant: string;
  gender: Gender;
  age: AgeGroup;
  label: string;
}

/** Variants chosen by listening-by-numbers (median F0: m1 95 Hz, m3 107, m7 109, f1 181, f4 182, f3 216). */
const FULL_SET: VariantSpec[] = [
  { variant: 'm1', gender: 'male', age: 'adult', label: 'Male 1' },
  { variant: 'm3', gender: 'male', age: 'adult', label: 'Male 2' },
  { variant: 'm7', gender: 'male', age: 'young', label: 'Young male' },
  { variant: 'grandpa', gender: 'male', age: 'senior', label: 'Senior male' },
  { variant: 'f1', gender: 'female', age: 'adult', label: 'Female 1' },
  { variant: 'f4', gender: 'female', age: 'adult', label: 'Female 2' },
  { variant: 'f3', gender: 'female', age: 'young', label: 'Young female' },
  { variant: 'grandma', gender: 'female', age: 'senior', label: 'Senior female' },
];
const REGIONAL_SET: VariantSpec[] = [FULL_SET[0]!, FULL_SET[4]!];

/**
 * Spec language key -> espeak voices with a display label. `espeak` names the voice in keys;
 * `file` is what espeak's SetVoiceByName accepts when it differs (British English is the plain "en").
 */
const LANGUAGE_VOICES: Array<{ language: string; espeak: string; file?: string; label: string; variants: VariantSpec[] }> = [
  { language: 'en', espeak: 'en-us', label: 'English (US)', variants: FULL_SET },
  { language: 'en', espeak: 'en-gb', file: 'en', label: 'English (UK)', variants: REGIONAL_SET },
  { language: 'zh', espeak: 'cmn', label: 'Chinese (Mandarin)', variants: FULL_SET },
  { language: 'zh_yue', espeak: 'yue', label: 'Chinese (Cantonese)', variants: FULL_SET },
  { language: 'ar', espeak: 'ar', label: 'Arabic', variants: FULL_SET },
  { language: 'ru', espeak: 'ru', label: 'Russian', variants: FULL_SET },
  { language: 'es', espeak: 'es', label: 'Spanish (Spain)', variants: FULL_SET },
  { language: 'es', espeak: 'es-419', label: 'Spanish (Latin America)', variants: REGIONAL_SET },
  { language: 'fr', espeak: 'fr', label: 'French', variants: FULL_SET },
  { language: 'pt', espeak: 'pt-br', label: 'Portuguese (Brazil)', variants: FULL_SET },
  { language: 'pt', espeak: 'pt', label: 'Portuguese (Portugal)', variants: REGIONAL_SET },
  { language: 'de', espeak: 'de', label: 'German', variants: FULL_SET },
  { language: 'ko', espeak: 'ko', label: 'Korean', variants: FULL_SET },
  { language: 'ja', espeak: 'ja', label: 'Japanese', variants: FULL_SET },
];

export function espeakVoiceCatalogue(): EngineVoice[] {
  return LANGUAGE_VOICES.flatMap((l) =>
    l.variants.map((v) => ({
      key: `espeak:${l.espeak}:${v.variant}`,
      engine: 'espeak',
      language: l.language,
      gender: v.gender,
      age: v.age,
      displayName: `${l.label} ${v.label}`,
      engineVoice: `${l.file ?? l.espeak}+${v.variant}`,
    })),
  );
}

/** The worker reads SSML (marks, prosody tags): user text must not inject any. */
function escapeSsml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Drops espeak's phoneme separators and language-switch markers such as "(en)". */
function cleanIpa(ipa: string): string {
  return ipa
    .replace(/\([a-z-]+\)/g, '')
    .replace(/_/g, '')
    .replace(/[ \t]+/g, ' ')
    .trim();
}

/** Seconds between the first and last sample above -40 dBFS: the speech itself, without padding. */
function speechSeconds(x: Float32Array, sampleRate: number): number {
  let a = 0;
  let b = x.length - 1;
  while (a < x.length && Math.abs(x[a]!) < 0.01) a++;
  while (b > a && Math.abs(x[b]!) < 0.01) b--;
  return Math.max(0, b - a) / sampleRate;
}

export class EspeakEngine implements TtsEngine {
  readonly id = 'espeak';
  /** Rate is handled here (espeak wpm plus a measured correction), never by stretching in the pipeline. */
  readonly nativeRate = true;
  readonly sampleRate = SAMPLE_RATE;
  private worker: Promise<EspeakWorker> | null = null;
  private readonly sonic = new SonicStretcher();

  /** Loads the WASM module on first use; each engine instance owns its own espeak state. */
  private load(): Promise<EspeakWorker> {
    if (!this.worker) {
      this.worker = import('@echogarden/espeak-ng-emscripten').then(async (m) => {
        const module = (await m.default()) as EspeakModule;
        return new module.eSpeakNGWorker();
      });
      this.worker.catch(() => {
        this.worker = null;
      });
    }
    return this.worker;
  }

  async listVoices(): Promise<EngineVoice[]> {
    return espeakVoiceCatalogue();
  }

  async synthesize(request: TtsRequest, ctx: EngineContext): Promise<AudioData> {
    ctx.signal.throwIfAborted();
    const worker = await this.load();
    const { prosody } = request;
    const text = escapeSsml(request.text);
    const params = {
      pitch: espeakPitch(prosody.pitch),
      range: espeakRange(prosody.pitchRange),
      volume: Math.max(0, Math.min(200, Math.round(100 * prosody.energy))),
    };
    const rate = Math.max(0.1, prosody.rate);
    // Foreign-script runs are read by the language owning the script, in the same variant (same speaker).
    const [base, variant] = request.voice.engineVoice.split('+');
    const parts: Float32Array[] = [];
    for (const run of splitScriptRuns(text, request.voice.language)) {
      const voice = run.espeak && run.espeak !== base ? `${run.espeak}${variant ? `+${variant}` : ''}` : request.voice.engineVoice;
      parts.push(await this.renderAtRate(worker, voice, run.text, params, rate));
    }
    const samples = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let offset = 0;
    for (const p of parts) {
      samples.set(p, offset);
      offset += p.length;
    }
    return { sampleRate: SAMPLE_RATE, channels: [samples] };
  }

  private async renderAtRate(
    worker: EspeakWorker,
    voice: string,
    text: string,
    params: { pitch: number; range: number; volume: number },
    rate: number,
  ): Promise<Float32Array> {
    let samples = this.render(worker, voice, text, { ...params, wpm: wpmForSpeed(rate) });
    if (Math.abs(rate - 1) > 0.02) {
      // Measure what espeak did against the same text at its default rate and correct the remainder
      // with a pitch-preserving stretch (close to 1 inside espeak's range, so artifacts stay negligible).
      const reference = this.render(worker, voice, text, { ...params, wpm: DEFAULT_WPM });
      const wanted = speechSeconds(reference, SAMPLE_RATE) / rate;
      const got = speechSeconds(samples, SAMPLE_RATE);
      if (wanted > 0 && got > 0) {
        const residual = got / wanted;
        if (Math.abs(residual - 1) > 0.03) samples = await this.sonic.stretch(samples, SAMPLE_RATE, residual);
      }
    }
    return samples;
  }

  private render(
    worker: EspeakWorker,
    voice: string,
    text: string,
    p: { wpm: number; pitch: number; range: number; volume: number },
  ): Float32Array {
    if (worker.set_voice(voice) !== 0) throw new Error(`espeak: unknown voice ${voice}`);
    worker.set_rate(p.wpm);
    worker.set_pitch(p.pitch);
    worker.set_range(p.range);
    worker.set_volume(p.volume);
    const parts: Int16Array[] = [];
    let total = 0;
    worker.synthesize(text, (chunk) => {
      if (chunk && chunk.length > 0) {
        parts.push(chunk);
        total += chunk.length;
      }
      return 0; // 0 = continue
    });
    const out = new Float32Array(total);
    let offset = 0;
    for (const part of parts) {
      for (let i = 0; i < part.length; i++) out[offset + i] = part[i]! / 32768;
      offset += part.length;
    }
    return out;
  }

  /**
   * IPA for a text, one sentence per line, clause punctuation kept (",", "?", "!" ...), for
   * phoneme-driven engines such as Piper. `espeakVoice` is an espeak voice name ("en-us", "cmn").
   */
  async phonemizeIpa(text: string, espeakVoice: string): Promise<string> {
    const worker = await this.load();
    if (worker.set_voice(espeakVoice) !== 0) throw new Error(`espeak: unknown voice ${espeakVoice}`);
    const lines: string[] = [];
    for (const chunk of splitText(text, '', { maxChars: 100_000 })) {
      // Clause by clause, so the punctuation that closes each clause survives next to its phonemes.
      const clauses = chunk.text.match(/[^,;:!?.，、；：！？。،؛؟]+[,;:!?.，、；：！？。،؛؟]*/gu) ?? [chunk.text];
      const parts: string[] = [];
      for (const clause of clauses) {
        const body = clause.replace(/[,;:!?.，、；：！？。،؛؟]+$/u, '');
        const punct = clause.slice(body.length).trim();
        if (!/[\p{L}\p{N}]/u.test(body)) continue;
        const ipa = cleanIpa(worker.synthesize_ipa(escapeSsml(body)).ipa.replace(/\n/g, ' '));
        if (ipa) parts.push(ipa + toAsciiPunctuation(punct));
      }
      if (parts.length > 0) lines.push(parts.join(' '));
    }
    return lines.join('\n');
  }
}

/** Phoneme inventories (Piper's among them) know ASCII punctuation only. */
function toAsciiPunctuation(p: string): string {
  const first = p[0];
  if (!first) return '';
  const map: Record<string, string> = { '，': ',', '、': ',', '；': ';', '：': ':', '！': '!', '？': '?', '。': '.', '،': ',', '؛': ';', '؟': '?' };
  return map[first] ?? first;
}
