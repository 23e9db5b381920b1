import type { AudioData } from '../domain/audio.js';

/** What every engine receives besides its input: never the database, never config globals. */
export interface EngineContext {
  /** A private scratch directory, removed by the caller after the run. */
  tmpDir: string;
  signal: AbortSignal;
  /** Fraction of the work done, 0..1. Cheap to call often. */
  onProgress(fraction: number): void;
}

/** Prosody requested from a TTS engine; every field is a multiplier around the voice's neutral (1 = unchanged). */
export interface Prosody {
  /** Speaking rate: 2 = twice as fast (half the duration). Pitch must not change with it. */
  rate: number;
  /** Base pitch multiplier (1.12 = about two semitones up). */
  pitch: number;
  /** Pitch range / intonation width multiplier. */
  pitchRange: number;
  /** Loudness multiplier applied as gain (1 = engine default). */
  energy: number;
}

export type Gender = 'male' | 'female';
export type AgeGroup = 'child' | 'young' | 'adult' | 'senior';

/** One voice as an engine knows it; the voice library maps these to the spec's numeric records. */
export interface EngineVoice {
  /** Stable across releases: the numeric API voice id is derived from it, never from list order. */
  key: string;
  engine: string;
  /** Spec language key: zh, en, ar, ru, es, fr, pt, de, ko, ja, zh_yue. */
  language: string;
  gender: Gender;
  age: AgeGroup;
  displayName: string;
  /** Engine-specific voice selector (espeak voice+variant, flite voice name, piper model file ...). */
  engineVoice: string;
  /** Numeric API voice id fixed by the engine's own table (e.g. the model catalog), when it has one. */
  apiId?: number;
  /** A voice of a neural model (Piper, Kokoro ...), as opposed to the built-in formant/diphone engines. */
  neural?: boolean;
  /**
   * The catalog models that must be downloaded before this voice can speak (MODELS_AUTO_PULL lists such voices; a
   * Kokoro voice can need both the shared model and its own style table); absent when everything is installed and
   * verified.
   */
  pullModels?: readonly string[];
}

export interface TtsRequest {
  text: string;
  voice: EngineVoice;
  prosody: Prosody;
}

export interface TtsEngine {
  readonly id: string;
  /** True when the engine changes rate natively without changing pitch (otherwise the pipeline time-stretches). */
  readonly nativeRate: boolean;
  listVoices(): Promise<EngineVoice[]>;
  /**
   * True when the engine reads Japanese text as written (kanji included) for this voice, with a front end of its own;
   * otherwise the pipeline hands a Japanese voice kana readings.
   */
  readsJapanese?(voice: EngineVoice): boolean;
  /** Synthesize one sentence-sized chunk of text (the pipeline splits long text). */
  synthesize(request: TtsRequest, ctx: EngineContext): Promise<AudioData>;
}
