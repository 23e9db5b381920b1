import { AppError } from '../../domain/errors.js';
import { EMOTION_NAMES } from '../../domain/vocabulary.js';
import { splitText } from '../../engines/tts/text.js';
import { PipeEncoder } from '../../media/pipe-encoder.js';
import type { AccountStore } from '../../ports/accounts.js';
import type { VoiceLibrary, VoiceRecord } from '../../ports/voices.js';
import type { Caller } from '../../services/auth.js';
import type { EngineThreads } from '../threads.js';
import type { TtsKindApi } from './api.js';
import type { OpenAiSpeechBody } from './contract.js';
import type { VoiceModels } from './voice-models.js';

/** Model names OpenAI clients send; every one is rendered by Soundry's own engines (docs/api.md). */
export const OPENAI_SPEECH_MODELS = ['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts', 'gpt-4o-mini-tts-2025-03-20', 'gpt-4o-mini-tts-2025-12-15', 'soundry-tts'] as const;

/**
 * OpenAI's voice names and the built-in voice (by its stable key) each one speaks with: English
 * espeak voices of the gender OpenAI's voice has, so a tool configured for "nova" gets a woman's voice.
 */
export const OPENAI_VOICES: Readonly<Record<string, string>> = {
  alloy: 'espeak:en-us:f1',
  ash: 'espeak:en-us:m3',
  ballad: 'espeak:en-us:m7',
  coral: 'espeak:en-us:f4',
  echo: 'espeak:en-us:m1',
  fable: 'espeak:en-gb:m1',
  nova: 'espeak:en-us:f3',
  onyx: 'espeak:en-us:grandpa',
  sage: 'espeak:en-gb:f1',
  shimmer: 'espeak:en-us:f4',
  verse: 'espeak:en-us:m3',
  marin: 'espeak:en-us:f3',
  cedar: 'espeak:en-us:m1',
};

/**
 * The voice an OpenAI voice name speaks with, among installed English neural voices of the mapped voice's gender:
 * Kokoro's namesake when it is installed (af_alloy, am_echo, bm_fable, af_nova, am_onyx), else the names of one gender
 * spread over those voices in table order (list order: Kokoro's before Piper's), else the built-in voice above.
 * A neural voice not downloaded yet is never picked for a name: a client that did not ask for it waits on no download.
 */
export function openAiVoice(name: string, all: readonly VoiceRecord[]): VoiceRecord | null {
  const key = OPENAI_VOICES[name];
  const builtin = key ? all.find((v) => v.name === key) : undefined;
  if (!builtin) return null;
  const neural = all.filter((v) => v.neural && v.downloaded !== false && v.language === 'en' && v.gender === builtin.gender);
  if (neural.length === 0) return builtin;
  const namesake = neural.find((v) => /^kokoro:[^:]+:[a-z][fm]_(.+)$/.exec(v.name)?.[1] === name);
  if (namesake) return namesake;
  const gender = (alias: string) => all.find((v) => v.name === OPENAI_VOICES[alias])?.gender;
  const peers = Object.keys(OPENAI_VOICES).filter((alias) => gender(alias) === builtin.gender);
  return neural[peers.indexOf(name) % neural.length]!;
}

/** OpenAI's pcm (and what every other format is resampled to): 24 kHz mono. */
export const OPENAI_SAMPLE_RATE = 24_000;

/** Words in `instructions` that name an emotion, to the emotion's name (first match in the text wins). */
const EMOTION_WORDS: ReadonlyArray<[RegExp, (typeof EMOTION_NAMES)[number]]> = [
  [/\b(happy|happily|cheerful|joyful|excited|upbeat)\b/i, 'happy'],
  [/\b(angry|angrily|furious|annoyed|mad)\b/i, 'angry'],
  [/\b(sad|sadly|unhappy|sorrowful|crying)\b/i, 'sad'],
  [/\b(afraid|scared|fearful|frightened|nervous)\b/i, 'afraid'],
  [/\b(disgusted|disgust|revolted)\b/i, 'disgusted'],
  [/\b(melancholic|melancholy|wistful|gloomy)\b/i, 'melancholic'],
  [/\b(surprised|astonished|amazed|shocked)\b/i, 'surprised'],
  [/\b(calm|calmly|soothing|relaxed|gentle|serene)\b/i, 'calm'],
];

/** The emotion id `instructions` names, or 0 (auto) when it names none. */
export function emotionFromInstructions(instructions: string | undefined): number {
  if (!instructions) return 0;
  let best: { at: number; id: number } | null = null;
  for (const [re, name] of EMOTION_WORDS) {
    const m = re.exec(instructions);
    if (m && (!best || m.index < best.at)) best = { at: m.index, id: EMOTION_NAMES.indexOf(name) };
  }
  return best?.id ?? 0;
}

export interface SpeechPlan {
  voice: VoiceRecord;
  format: OpenAiSpeechBody['response_format'];
  sentences: Array<{ text: string; pauseAfterSeconds: number }>;
  emotion: number;
  speed: number;
  price: number;
}

/** A refusal on the OpenAI routes names the body field it is about (OpenAI's `param`). */
export class SpeechRefusal extends AppError {
  constructor(
    readonly param: string,
    detail: string,
  ) {
    super('INVALID_PARAMETERS', detail);
  }
}

/**
 * OpenAI's POST /v1/audio/speech on Soundry's TTS: the same checks and price as a TTS task (TtsKindApi),
 * then sentence by sentence on the engine threads, each encoded and handed out as soon as it is spoken.
 */
export class OpenAiSpeech {
  constructor(
    private readonly deps: { voices: VoiceLibrary; tts: TtsKindApi; threads: () => EngineThreads; accounts: AccountStore; ffmpeg: string; models: VoiceModels },
  ) {}

  /** An OpenAI voice name, a Soundry voice id ("1005") or a Soundry voice name ("espeak:en-us:f1"). */
  async resolveVoice(requested: string): Promise<VoiceRecord | null> {
    const all = await this.deps.voices.list();
    const wanted = requested.trim();
    if (OPENAI_VOICES[wanted.toLowerCase()]) return openAiVoice(wanted.toLowerCase(), all);
    if (/^\d+$/.test(wanted)) return all.find((v) => v.id === Number(wanted)) ?? null;
    return all.find((v) => v.name === wanted) ?? all.find((v) => v.display_name.toLowerCase() === wanted.toLowerCase()) ?? null;
  }

  /** Every check before any work or charge; throws SpeechRefusal/AppError. */
  async plan(body: OpenAiSpeechBody): Promise<SpeechPlan> {
    if (!(OPENAI_SPEECH_MODELS as readonly string[]).includes(body.model)) {
      throw new SpeechRefusal('model', `Invalid model '${body.model}': one of ${OPENAI_SPEECH_MODELS.join(', ')}`);
    }
    const voiceName = typeof body.voice === 'string' ? body.voice : body.voice.id;
    const voice = await this.resolveVoice(voiceName);
    if (!voice) throw new SpeechRefusal('voice', `Invalid voice '${voiceName}': an OpenAI voice name (${Object.keys(OPENAI_VOICES).join(', ')}) or a Soundry voice id or name (GET /v1/audio/voices)`);
    // An emotion the voice lacks falls back to auto: instructions are a hint, not a contract.
    const named = emotionFromInstructions(body.instructions);
    const emotion = voice.emotion.includes(EMOTION_NAMES[named] ?? 'auto') ? named : 0;
    // The TTS task's own checks and price, so the two routes can never disagree on either.
    const prepared = await this.deps.tts.prepare({ voice_id: voice.id, emotion, speed: body.speed, language: 'all', text: body.input, format: 'wav' }).catch((err: unknown) => {
      // The task's field is `text`; here the client sent `input`, and OpenAI's clients read `param` to show which field.
      const prefix = 'Invalid parameters: text: ';
      if (err instanceof AppError && err.message.startsWith(prefix)) throw new SpeechRefusal('input', `Invalid input: ${err.message.slice(prefix.length)}`);
      throw err;
    });
    const sentences = splitText(body.input, voice.language);
    return { voice, format: body.response_format, sentences, emotion, speed: body.speed, price: prepared.knownPrice ?? 0 };
  }

  /**
   * Takes the price once, before any work (a 402 when the balance is short). A failure of ours refunds
   * it; a client that hangs up part way through has had what was sent (docs/api.md).
   */
  async charge(caller: Caller, plan: SpeechPlan): Promise<{ refund(): Promise<void> }> {
    if (caller.account.balance < plan.price) throw new AppError('INSUFFICIENT_CREDITS');
    // The whole price or nothing, checked against the balance less what unfinished tasks hold, in one transaction:
    // requests racing past the cached pre-check above cannot take credits that tasks were promised.
    if (!(await this.deps.accounts.spendCredits(caller.account.id, plan.price, 'openai_speech'))) throw new AppError('INSUFFICIENT_CREDITS');
    let refunded = false;
    return {
      refund: async () => {
        if (refunded || plan.price === 0) return;
        refunded = true;
        await this.deps.accounts.adjustCredits(caller.account.id, plan.price, 'openai_speech_refund');
      },
    };
  }

  /**
   * The encoded audio, chunk by chunk as ffmpeg writes it. Sentences are synthesized in order on the
   * engine threads while ffmpeg encodes the ones before, so the first bytes leave after the first sentence.
   */
  /**
   * `onEngine`: told which engine spoke the first sentence (and why, when a built-in voice stood in for the one
   * asked for) before its audio is handed out, so the answer's headers can say so (docs/api.md).
   */
  async *stream(plan: SpeechPlan, signal: AbortSignal, onEngine?: (engine: string, note?: string) => void): AsyncGenerator<Buffer> {
    let encoder: PipeEncoder | null = null;
    let ready!: (e: PipeEncoder | null) => void;
    const started = new Promise<PipeEncoder | null>((r) => (ready = r));
    const produce = (async () => {
      try {
        // A neural voice not installed yet is downloaded before the first sentence (MODELS_AUTO_PULL; the client waits
        // for its first bytes); one that cannot be had speaks with its built-in stand-in.
        const unavailable = await this.deps.models.ensure(plan.voice.id, { signal, onProgress: () => {} });
        for (const sentence of plan.sentences) {
          if (signal.aborted) throw signal.reason;
          const out = await this.deps.threads().run(
            'tts',
            { text: sentence.text, language: plan.voice.language, voiceId: plan.voice.id, emotion: plan.emotion, speed: plan.speed, ...(unavailable ? { unavailable } : {}) },
            { signal, onProgress: () => {} },
          );
          if (!encoder) {
            onEngine?.(out.engine, out.engineNote);
            encoder = new PipeEncoder({ ffmpeg: this.deps.ffmpeg, format: plan.format, inputRate: out.sampleRate, outputRate: OPENAI_SAMPLE_RATE, signal });
            ready(encoder);
          }
          await encoder.write(out.samples);
          const pause = Math.round(sentence.pauseAfterSeconds * out.sampleRate);
          if (pause > 0) await encoder.write(new Float32Array(pause));
        }
      } catch (err) {
        encoder?.kill();
        throw err;
      } finally {
        ready(encoder);
        encoder?.end();
      }
    })();
    produce.catch(() => undefined); // awaited below
    const enc = await started;
    try {
      if (enc) for await (const chunk of enc.output) yield chunk;
      await produce;
      await enc?.done;
    } finally {
      enc?.kill();
    }
  }
}
