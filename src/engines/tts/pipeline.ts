import { TaskFailure } from '../../domain/errors.js';
import type { AudioData } from '../../media/audio.js';
import type { EngineContext, EngineVoice, Prosody, TtsEngine } from '../../ports/engines.js';
import { chooseAutoEmotion, emotionName, prosodyFor } from './emotions.js';
import { JapaneseReader } from './japanese.js';
import { splitScriptRuns } from './script-runs.js';
import { SonicStretcher } from './sonic.js';
import { splitText } from './text.js';

export interface PipelineInput {
  text: string;
  language: string;
  voice: EngineVoice;
  /** Spec emotion id; 0 (auto) is resolved from the text here. */
  emotionId: number;
  /** User speed multiplier (0.25..4). */
  speed: number;
}

export interface PipelineOptions {
  /** Reused across calls so the WASM loads once (state lives on instances, never on the module). */
  sonic?: SonicStretcher;
  japanese?: JapaneseReader;
}

/** Silence kept around speech after trimming: enough for onsets and releases to sound natural. */
const LEAD_MARGIN_S = 0.04;
const TAIL_MARGIN_S = 0.07;
/** Raised-cosine fades at every boundary: short enough to be inaudible, long enough to stop clicks. */
const FADE_S = 0.008;
const TARGET_PEAK = 10 ** (-1 / 20); // -1 dBFS

/**
 * Text -> mono audio at the engine's rate: Japanese kana conversion, chunking, per-chunk synthesis
 * (with progress and cancellation), tempo, silence trimming, pauses, click-free joins, loudness.
 */
export async function synthesizeText(
  input: PipelineInput,
  engine: TtsEngine,
  ctx: EngineContext,
  opts: PipelineOptions = {},
): Promise<AudioData> {
  const speed = Math.min(4, Math.max(0.25, Number.isFinite(input.speed) ? input.speed : 1));
  const emotionId = input.emotionId === 0 ? chooseAutoEmotion(input.text, input.language) : input.emotionId;
  const prosody = prosodyFor(emotionName(emotionId) ?? 'auto', speed);
  let text = input.text;
  if (input.language === 'ja') {
    // An engine with its own Japanese front end (Kokoro's) needs the words as written: kana alone loses the segmentation.
    if (!engine.readsJapanese?.(input.voice)) text = await (opts.japanese ?? new JapaneseReader()).toKana(text);
  } else if (JAPANESE_KANA.test(text)) text = await japaneseRunsToKana(text, input.language, opts.japanese ?? new JapaneseReader());
  const chunks = splitText(text, input.language);
  if (chunks.length === 0) throw new TaskFailure('nothing to say: the text has no letters or digits');

  // Loudness is applied once on the whole result (normalization would undo a per-chunk gain).
  const engineProsody: Prosody = { ...prosody, rate: engine.nativeRate ? prosody.rate : 1, energy: 1 };
  const sonic = engine.nativeRate ? null : (opts.sonic ?? new SonicStretcher());
  const pieces: Float32Array[] = [];
  let sampleRate = 0;
  for (let i = 0; i < chunks.length; i++) {
    ctx.signal.throwIfAborted();
    const chunk = chunks[i]!;
    const audio = await engine.synthesize({ text: chunk.text, voice: input.voice, prosody: engineProsody }, ctx);
    if (sampleRate === 0) sampleRate = audio.sampleRate;
    if (audio.sampleRate !== sampleRate) throw new Error(`${engine.id}: chunks came at different sample rates`);
    let samples = toMono(audio);
    if (sonic) samples = await sonic.stretch(samples, sampleRate, prosody.rate);
    const speech = trimSilence(samples, sampleRate);
    if (speech.length > 0) {
      fade(speech, sampleRate);
      pieces.push(speech);
    }
    // A faster speaker also pauses for less time; clamp so speed 4 still leaves audible breaks.
    const pause = chunk.pauseAfterSeconds / Math.min(2.5, Math.max(0.5, prosody.rate));
    if (pause > 0 && i < chunks.length - 1) pieces.push(new Float32Array(Math.round(pause * sampleRate)));
    ctx.onProgress((i + 1) / chunks.length);
  }
  const joined = concat(pieces);
  applyLoudness(joined, prosody.energy);
  return { sampleRate, channels: [joined] };
}

const JAPANESE_KANA = /[\p{Script=Hiragana}\p{Script=Katakana}]/u;

/** Japanese inside another language's text: its kanji become kana too, so espeak's ja voice can read the run. */
async function japaneseRunsToKana(text: string, language: string, reader: JapaneseReader): Promise<string> {
  let out = '';
  for (const run of splitScriptRuns(text, language)) out += run.espeak === 'ja' ? await reader.toKana(run.text) : run.text;
  return out;
}

function toMono(audio: AudioData): Float32Array {
  if (audio.channels.length === 1) return audio.channels[0]!;
  const n = audio.channels[0]?.length ?? 0;
  const out = new Float32Array(n);
  for (const ch of audio.channels) for (let i = 0; i < n; i++) out[i] = out[i]! + ch[i]! / audio.channels.length;
  return out;
}

/**
 * Cuts leading and trailing silence to a natural margin. Silence is judged per 5 ms window against
 * the chunk's loudest window (-40 dB), so quiet voices and loud ones trim alike.
 */
export function trimSilence(x: Float32Array, sampleRate: number): Float32Array {
  const win = Math.max(1, Math.round(sampleRate * 0.005));
  const count = Math.floor(x.length / win);
  const energies = new Float32Array(count);
  let max = 0;
  for (let w = 0; w < count; w++) {
    let s = 0;
    for (let i = w * win; i < (w + 1) * win; i++) s += x[i]! * x[i]!;
    energies[w] = Math.sqrt(s / win);
    max = Math.max(max, energies[w]!);
  }
  if (max < 1e-4) return new Float32Array(0); // nothing audible at all
  const threshold = max * 0.01;
  let first = 0;
  while (first < count && energies[first]! < threshold) first++;
  let last = count - 1;
  while (last > first && energies[last]! < threshold) last--;
  const start = Math.max(0, first * win - Math.round(LEAD_MARGIN_S * sampleRate));
  const end = Math.min(x.length, (last + 1) * win + Math.round(TAIL_MARGIN_S * sampleRate));
  return x.slice(start, end);
}

/**
 * Raised-cosine fade-in and fade-out, in place, anchored where the signal actually starts and ends
 * (engines such as espeak start and stop voicing abruptly after exact-zero padding, which would
 * click at a join however the padding itself is faded). Anything outside is set to exact zero.
 */
export function fade(x: Float32Array, sampleRate: number): void {
  let peak = 0;
  for (const v of x) peak = Math.max(peak, Math.abs(v));
  const floor = peak * 1e-3;
  let a = 0;
  while (a < x.length && Math.abs(x[a]!) <= floor) a++;
  let b = x.length - 1;
  while (b > a && Math.abs(x[b]!) <= floor) b--;
  x.fill(0, 0, a);
  x.fill(0, b + 1);
  const n = Math.min(Math.round(FADE_S * sampleRate), Math.floor((b - a + 1) / 2));
  for (let i = 0; i < n; i++) {
    const g = 0.5 - 0.5 * Math.cos((Math.PI * i) / n);
    x[a + i] = x[a + i]! * g;
    x[b - i] = x[b - i]! * g;
  }
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/**
 * Peak-normalizes to -1 dBFS, then applies the emotion's energy: softer emotions scale down; louder
 * ones (energy > 1) get a gentle tanh saturation that raises loudness without passing the peak.
 */
function applyLoudness(x: Float32Array, energy: number): void {
  let peak = 0;
  for (const v of x) peak = Math.max(peak, Math.abs(v));
  if (peak < 1e-6) return;
  const drive = energy > 1 ? 4 * (energy - 1) : 0;
  const norm = drive > 0 ? Math.tanh(drive) : 1;
  const target = TARGET_PEAK * Math.min(1, energy);
  for (let i = 0; i < x.length; i++) {
    const v = x[i]! / peak;
    x[i] = (drive > 0 ? Math.tanh(drive * v) / norm : v) * target;
  }
}
