import type { AudioData } from '../../media/audio.js';
import type { AudioSource, SeparationEngine, StemSink } from '../separation/engine.js';
import { SpeechSeparationEngine } from './speech-separator.js';
import { frameCount, SampleFifo, type AudioStage } from './stage.js';

/**
 * Voice/music separation inside the enhancement chain. Separation engines are pull-based (they read an
 * AudioSource and write stems to a sink); chain stages are push-based. The bridge runs the engine in the
 * background on a source fed by `push`, and every `push` returns once the engine has consumed the block
 * and asks for more, so only the engine's own working set (one segment, ~24 s for the built-in engine)
 * plus the stems it has emitted since the last call are held: memory stays flat on long files.
 */

/** The model types that yield a `vocals` stem, in order of preference (350: vocals + remainder). */
const VOCAL_MODEL_TYPES = [350, 501, 320] as const;

export interface VocalEngineChoice {
  engine: SeparationEngine;
  modelType: number;
}

/**
 * The first candidate (callers list neural engines first, when their models are installed) that can
 * produce a vocals stem; otherwise the built-in speech separator (the song engine's vocal mask is
 * tuned for singing and costs speech 8 dB SI-SDR, see bench/results/enhance.md), so the flags always work.
 */
export function pickVocalEngine(candidates: readonly SeparationEngine[] = []): VocalEngineChoice {
  for (const engine of candidates) {
    const modelType = VOCAL_MODEL_TYPES.find((t) => engine.supports(t));
    if (modelType !== undefined) return { engine, modelType };
  }
  return { engine: new SpeechSeparationEngine(), modelType: 350 };
}

interface Stems {
  vocals: Float32Array[];
  /** Everything that is not voice: the sum of the other stems. */
  music: Float32Array[];
}

class SeparationBridge {
  private readonly queue: AudioData[] = [];
  private closed = false;
  private hungry = false;
  private finished = false;
  private failure: unknown = null;
  private wakeEngine: (() => void) | null = null;
  private wakeCaller: (() => void) | null = null;
  private readonly vocals: SampleFifo;
  private readonly music: SampleFifo;
  private readonly running: Promise<void>;

  constructor(choice: VocalEngineChoice, sampleRate: number, private readonly channelCount: number, signal: AbortSignal, tmpDir: string) {
    this.vocals = new SampleFifo(channelCount);
    this.music = new SampleFifo(channelCount);
    const source: AudioSource = { sampleRate, channelCount, blocks: () => this.blocks() };
    const sink: StemSink = { write: (_start, stems) => this.collect(stems) };
    this.running = choice.engine
      .separate(source, choice.modelType, { signal, tmpDir, onProgress: () => undefined }, sink)
      .then(
        () => this.settle(null),
        (err: unknown) => this.settle(err ?? new Error('separation failed')),
      );
  }

  private settle(err: unknown): void {
    this.failure = err;
    this.finished = true;
    this.wakeCaller?.();
  }

  private async *blocks(): AsyncGenerator<AudioData> {
    for (;;) {
      const next = this.queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.closed) return;
      this.hungry = true;
      this.wakeCaller?.();
      await new Promise<void>((r) => (this.wakeEngine = r));
    }
  }

  private collect(stems: Readonly<Record<string, AudioData>>): void {
    const voice = stems.vocals;
    if (!voice) throw new Error('separation engine gave no vocals stem');
    const n = frameCount(voice);
    const music = Array.from({ length: this.channelCount }, () => new Float32Array(n));
    for (const [name, stem] of Object.entries(stems)) {
      if (name === 'vocals') continue;
      stem.channels.forEach((c, i) => {
        const m = music[i]!;
        for (let k = 0; k < n; k++) m[k]! += c[k]!;
      });
    }
    this.vocals.push(voice.channels);
    this.music.push(music);
  }

  /** Waits until the engine wants more input (or has finished), then hands over what it produced. */
  private async drain(): Promise<Stems | null> {
    while (!this.hungry && !this.finished) await new Promise<void>((r) => (this.wakeCaller = r));
    this.wakeCaller = null;
    if (this.failure) throw this.failure;
    const n = this.vocals.length;
    return n ? { vocals: this.vocals.take(n), music: this.music.take(n) } : null;
  }

  async push(block: AudioData): Promise<Stems | null> {
    if (this.finished) throw this.failure ?? new Error('separation engine stopped early');
    this.queue.push(block);
    this.hungry = false;
    const wake = this.wakeEngine;
    this.wakeEngine = null;
    wake?.();
    return this.drain();
  }

  async flush(): Promise<Stems | null> {
    this.closed = true;
    const wake = this.wakeEngine;
    this.wakeEngine = null;
    wake?.();
    await this.running;
    this.hungry = true;
    return this.drain();
  }
}

async function through(stages: readonly AudioStage[], from: number, block: AudioData | null): Promise<AudioData | null> {
  let cur = block;
  for (let i = from; i < stages.length && cur && frameCount(cur) > 0; i++) cur = await stages[i]!.push(cur);
  return cur && frameCount(cur) > 0 ? cur : null;
}

export interface SeparationStageOptions {
  choice: VocalEngineChoice;
  /**
   * 'voice': output the vocals stem only (remove_background_audio).
   * 'keep_music': run `voiceStages` on the vocals stem only and mix the music stem back (keep_music).
   */
  mode: 'voice' | 'keep_music';
  /** Length-preserving stages (denoise, dereverb) applied to the voice alone in keep_music mode. */
  voiceStages?: AudioStage[];
  signal: AbortSignal;
  tmpDir: string;
}

/** The separation step as a chain stage; output stays sample-aligned with the input and as long. */
export class SeparationStage implements AudioStage {
  readonly name: string;
  private readonly bridge: SeparationBridge;
  private readonly voiceStages: AudioStage[];
  /** Music waiting for the processed voice it is mixed with (voice stages may lag). */
  private readonly pendingMusic: SampleFifo;

  constructor(readonly sampleRate: number, readonly channelCount: number, private readonly opts: SeparationStageOptions) {
    this.name = opts.mode === 'voice' ? 'separate-voice' : 'keep-music';
    this.bridge = new SeparationBridge(opts.choice, sampleRate, channelCount, opts.signal, opts.tmpDir);
    this.voiceStages = opts.mode === 'keep_music' ? (opts.voiceStages ?? []) : [];
    this.pendingMusic = new SampleFifo(channelCount);
  }

  private remix(voice: AudioData | null): AudioData | null {
    if (!voice) return null;
    const n = frameCount(voice);
    const music = this.pendingMusic.take(n);
    const channels = voice.channels.map((v, c) => {
      const out = Float32Array.from(v);
      const m = music[c]!;
      for (let i = 0; i < m.length; i++) out[i]! += m[i]!;
      return out;
    });
    return { sampleRate: this.sampleRate, channels };
  }

  private async route(stems: Stems | null): Promise<AudioData | null> {
    if (!stems) return null;
    const voice: AudioData = { sampleRate: this.sampleRate, channels: stems.vocals };
    if (this.opts.mode === 'voice') return voice;
    this.pendingMusic.push(stems.music);
    return this.remix(await through(this.voiceStages, 0, voice));
  }

  async push(block: AudioData): Promise<AudioData | null> {
    return this.route(await this.bridge.push(block));
  }

  async flush(): Promise<AudioData | null> {
    const parts: AudioData[] = [];
    const last = await this.route(await this.bridge.flush());
    if (last) parts.push(last);
    // Each voice stage's held tail still flows through the stages after it, then meets its music.
    for (let i = 0; i < this.voiceStages.length; i++) {
      const out = this.remix(await through(this.voiceStages, i + 1, await this.voiceStages[i]!.flush()));
      if (out) parts.push(out);
    }
    // Anything the voice stages did not return (they preserve length, so normally nothing) stays music.
    if (this.pendingMusic.length) parts.push({ sampleRate: this.sampleRate, channels: this.pendingMusic.take(this.pendingMusic.length) });
    if (!parts.length) return null;
    const total = parts.reduce((a, p) => a + frameCount(p), 0);
    const channels = Array.from({ length: this.channelCount }, () => new Float32Array(total));
    let at = 0;
    for (const p of parts) {
      p.channels.forEach((c, i) => channels[i]!.set(c, at));
      at += frameCount(p);
    }
    return { sampleRate: this.sampleRate, channels };
  }
}
