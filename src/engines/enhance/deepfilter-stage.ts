import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import * as ort from 'onnxruntime-node';
import type { AudioData } from '../../media/audio.js';
import { loadFftProvider, type RealFft } from '../../media/dsp/fft.js';
import { DFN3_ARCHIVE } from '../../models/catalog-enhance.js';
import { expectedChecksum } from '../../models/installed.js';
import { memberByBaseName, readTarGz, type TarLimits } from '../../models/tar.js';
import { verifiedModelSync, type ModelSource } from '../../models/verified.js';
import { parseDfConfig, type DfArchiveConfig } from './deepfilter-config.js';
import { DfStream, type DfSessions } from './deepfilter-core.js';
import { StreamResampler } from '../../media/dsp/resample.js';
import { LatencyTrim, type AudioStage } from './stage.js';

/**
 * DeepFilterNet3 as an enhancement stage: the authors' archive (DeepFilterNet3_onnx.tar.gz) is read from MODELS_DIR
 * only once its bytes hash to the catalog's checksum, its members are taken from memory (never unpacked to disk), and
 * the three graphs run through the numeric core (deepfilter-core.ts, proved against DeepFilterNet's own pipeline).
 *
 * Input at any rate is resampled to the model's 48 kHz and back with the shared streaming resampler (time-aligned), one
 * DfStream per channel (the reference enhances each channel on its own). Memory stays bounded over hour-long inputs:
 * the networks run on windows of WINDOW_FRAMES frames, each warmed up on the core's context frames before it (the
 * analysis, features and synthesis carry their state exactly across windows; only the GRUs restart). The output has
 * the input's length and alignment: the core compensates its look-ahead as enhance(pad=True) does, and the rest of
 * the delay is only when samples come out (up to a window).
 *
 * One step the reference does not take: a level guard. The network's features are absolute levels, and measured on the
 * published weights it mutes speech recorded very quietly (two corpus pairs at about -50 dBFS RMS came out at -109 and
 * -117 dBFS, SI-SDR -32 and -37 dB; lifted 20 dB first they kept their input's +2.1 and +0.7 dB). So the stage looks
 * at the first LEVEL_PROBE_SECONDS of input; where speech there (the 90th percentile of 10 ms frame levels) is under
 * QUIET_BELOW_DB it lifts the input to LIFT_TO_DB for the network and lowers the output by the same constant gain.
 * Input at ordinary levels passes untouched, so the output is the reference's.
 */

/**
 * Frames (10 ms each) per network run, each warmed up on the core's 200 frames before it. The networks' recurrent
 * state carries more than 2 s: measured on the published weights, shorter windows cost quality where the noise
 * changes (a 16.7 s corpus pair at 5 dB: SI-SDR 10.52 dB in one pass and with 2000-frame windows, 9.35 with 1000, 7.06
 * with 500; over 104 s of speech the windowed output differs from one pass by -33.8, -31.6, -29.1 dB), while memory
 * grows with the window (120 s at 48 kHz, one stage, peak RSS: 865 MB at 2000 with onnxruntime's arena, 669 MB
 * without it (sessionOptions below), 425 MB at 500). 2000 keeps the quality of one pass at a bounded cost.
 */
export const WINDOW_FRAMES = 2000;

/** The level guard (see above): how much input it looks at, when it acts, and where it puts the speech. */
export const LEVEL_PROBE_SECONDS = 20;
export const QUIET_BELOW_DB = -35;
export const LIFT_TO_DB = -25;
export const MAX_LIFT_DB = 40;

/**
 * The constant gain for the network: 1 unless the speech level (90th percentile of 10 ms frame levels, channels
 * averaged, digital silence left out) is under QUIET_BELOW_DB; then it lifts that level to LIFT_TO_DB, at most MAX_LIFT_DB.
 */
export function levelGuardGain(channels: readonly Float32Array[], sampleRate: number): number {
  const frame = Math.max(1, Math.round(sampleRate * 0.01));
  const n = channels[0]?.length ?? 0;
  const levels: number[] = [];
  for (let at = 0; at + frame <= n; at += frame) {
    let sum = 0;
    for (const ch of channels) for (let i = at; i < at + frame; i++) sum += ch[i]! * ch[i]!;
    const db = 10 * Math.log10(sum / (frame * channels.length) + 1e-30);
    if (db > -100) levels.push(db);
  }
  if (levels.length < 10) return 1;
  levels.sort((a, b) => a - b);
  const speech = levels[Math.floor(0.9 * (levels.length - 1))]!;
  if (speech >= QUIET_BELOW_DB) return 1;
  return 10 ** (Math.min(MAX_LIFT_DB, LIFT_TO_DB - speech) / 20);
}

/** The archive is ~8 MB; these bound what a replaced or hostile one can make this process allocate. */
export const DFN3_ARCHIVE_MAX_BYTES = 64 << 20;
export const DFN3_TAR_LIMITS: TarLimits = { maxUnpackedBytes: 128 << 20, maxEntries: 64, maxMemberBytes: 64 << 20 };

/** Verified by size and checksum against the (effective) catalog, never merely present. */
export function deepFilterAvailable(models: string | ModelSource): boolean {
  return verifiedModelSync(models, 'deepfilternet3').ok;
}

export interface DeepFilterModel {
  cfg: DfArchiveConfig;
  sessions: DfSessions;
  release(): Promise<void>;
}

/** Reads at most `max` bytes of a file, refusing one that is larger (a replaced file is checked before it is held). */
async function readBounded(path: string, max: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    if (size > max) throw new Error(`${path} is ${size} bytes (more than ${max})`);
    const buf = Buffer.alloc(size);
    let at = 0;
    while (at < size) {
      const { bytesRead } = await fh.read(buf, at, size - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return buf.subarray(0, at);
  } finally {
    await fh.close();
  }
}

function sessionOptions(providers: readonly string[]): ort.InferenceSession.SessionOptions {
  // One intra-op thread: long inputs are split across worker threads, which share the cores. No arena and no memory
  // pattern: with them a 2000-frame window peaked 196 MB higher (865 against 669 MB) at the same CPU time.
  return {
    executionProviders: [...providers], intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential',
    enableCpuMemArena: false, enableMemPattern: false,
  };
}

/**
 * Opens the verified archive: its bytes are hashed again as read (what is parsed is what was verified, even if the file
 * changed after the check), the members come out of memory with bounded sizes, and each graph's error names it.
 */
export async function loadDeepFilter(models: string | ModelSource, providers: readonly string[] = ['cpu']): Promise<DeepFilterModel> {
  const model = verifiedModelSync(models, 'deepfilternet3');
  if (!model.ok) throw new Error(`deepfilternet3 is not installed${model.reason ? ` (${model.reason})` : ''}`);
  const path = model.files.get(DFN3_ARCHIVE);
  const file = model.entry.files.find((f) => f.path === DFN3_ARCHIVE);
  if (!path || !file) throw new Error(`the catalog entry deepfilternet3 lacks the file ${DFN3_ARCHIVE}`);
  const gz = await readBounded(path, Math.min(DFN3_ARCHIVE_MAX_BYTES, file.sizeBytes));
  const sum = expectedChecksum(file);
  if (gz.length !== file.sizeBytes || (sum && createHash(sum.algorithm).update(gz).digest('hex') !== sum.expected.toLowerCase())) {
    throw new Error(`${path} changed after it was verified (size or ${sum?.algorithm ?? 'checksum'} differs)`);
  }
  const members = readTarGz(gz, DFN3_TAR_LIMITS);
  const cfg = parseDfConfig(Buffer.from(memberByBaseName(members, 'config.ini').data).toString('utf8'));
  const opened: ort.InferenceSession[] = [];
  const openGraph = async (name: string): Promise<ort.InferenceSession> => {
    const bytes = memberByBaseName(members, name).data;
    try {
      // A copy that starts at offset 0: the member is a view into the unpacked tar.
      const s = await ort.InferenceSession.create(Uint8Array.from(bytes), sessionOptions(providers));
      opened.push(s);
      return s;
    } catch (err) {
      throw new Error(`${path}:${name} could not be loaded (${providers.join(', ')}): ${(err as Error).message.split('\n')[0]}`);
    }
  };
  try {
    const sessions: DfSessions = { enc: await openGraph('enc.onnx'), erbDec: await openGraph('erb_dec.onnx'), dfDec: await openGraph('df_dec.onnx') };
    return { cfg, sessions, release: async () => void (await Promise.all(opened.map((s) => s.release()))) };
  } catch (err) {
    await Promise.all(opened.map((s) => s.release()));
    throw err;
  }
}

export interface DeepFilterStageOptions {
  /** MODELS_DIR, or MODELS_DIR with the effective catalog. */
  models: string | ModelSource;
  /** ONNX_EXECUTION_PROVIDER's resolved providers (default CPU). */
  executionProviders?: readonly string[];
  /** Stops a window run; the chain checks between blocks too. */
  signal?: AbortSignal;
  /** enhance()'s atten_lim_db (absent: no limit, the reference default). */
  attenLimDb?: number;
  /** Frames per network run (default WINDOW_FRAMES) and warm-up frames before each (default: the core's). */
  windowFrames?: number;
  contextFrames?: number;
}

export class DeepFilterStage implements AudioStage {
  readonly name = 'deepfilternet3';
  private readonly trim = new LatencyTrim(0);
  private inputFrames = 0;
  private outputFrames = 0;
  private released = false;
  /** The level guard's gain, null while the first seconds are still held to decide it. */
  private gain: number | null = null;
  private held: Float32Array[][] = [];
  private heldFrames = 0;

  private constructor(
    readonly sampleRate: number,
    private readonly model: DeepFilterModel,
    private readonly streams: DfStream[],
    private readonly ffts: RealFft[],
    private readonly up: StreamResampler,
    private readonly down: StreamResampler,
  ) {}

  static async create(sampleRate: number, channelCount: number, opts: DeepFilterStageOptions): Promise<DeepFilterStage> {
    if (!(channelCount >= 1)) throw new Error(`deepfilternet3: ${channelCount} channels`);
    const model = await loadDeepFilter(opts.models, opts.executionProviders);
    const ffts: RealFft[] = [];
    try {
      const provider = await loadFftProvider();
      const streamOpts = {
        windowFrames: opts.windowFrames ?? WINDOW_FRAMES,
        ...(opts.contextFrames !== undefined ? { contextFrames: opts.contextFrames } : {}),
        ...(opts.attenLimDb !== undefined ? { attenLimDb: opts.attenLimDb } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      };
      const streams: DfStream[] = [];
      for (let c = 0; c < channelCount; c++) {
        const fft = provider.create(model.cfg.fftSize);
        ffts.push(fft);
        streams.push(new DfStream(model.cfg, model.sessions, fft, streamOpts));
      }
      const up = await StreamResampler.create(channelCount, sampleRate, model.cfg.sampleRate);
      const down = await StreamResampler.create(channelCount, model.cfg.sampleRate, sampleRate);
      return new DeepFilterStage(sampleRate, model, streams, ffts, up, down);
    } catch (err) {
      for (const f of ffts) f.dispose();
      await model.release();
      throw err;
    }
  }

  /** Every channel's stream gets the same samples, so each returns the same count. */
  private async run(x: Float32Array[], end: boolean): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let c = 0; c < this.streams.length; c++) {
      const s = this.streams[c]!;
      const a = await s.push(x[c]!);
      out.push(end ? joined(a, await s.flush()) : a);
    }
    if (out.some((o) => o.length !== out[0]!.length)) throw new Error('deepfilternet3: channels out of step');
    return out;
  }

  private emit(ch: Float32Array[]): AudioData | null {
    const t = this.trim.apply(ch);
    if (!t) return null;
    this.outputFrames += t[0]?.length ?? 0;
    return { sampleRate: this.sampleRate, channels: t };
  }

  /** The gain in, the network at 48 kHz, the gain out (a constant, so its order against the resampling is free). */
  private async through(x: Float32Array[]): Promise<Float32Array[]> {
    const g = this.gain ?? 1;
    const y = this.down.process(await this.run(this.up.process(g === 1 ? x : x.map((c) => c.map((v) => v * g))), false));
    return g === 1 ? y : y.map((c) => c.map((v) => v / g));
  }

  /** Decides the level guard's gain on what is held and runs it through. */
  private async releaseHeld(): Promise<Float32Array[]> {
    const held = this.streams.map((_, c) => {
      const all = new Float32Array(this.heldFrames);
      let at = 0;
      for (const b of this.held) {
        all.set(b[c]!, at);
        at += b[c]!.length;
      }
      return all;
    });
    this.held = [];
    this.gain = levelGuardGain(held, this.sampleRate);
    return this.through(held);
  }

  async push(block: AudioData): Promise<AudioData | null> {
    const n = block.channels[0]?.length ?? 0;
    this.inputFrames += n;
    this.trim.countInput(n);
    if (this.gain === null) {
      this.held.push(block.channels.map((c) => c.slice()));
      this.heldFrames += n;
      if (this.heldFrames < LEVEL_PROBE_SECONDS * this.sampleRate) return null;
      return this.emit(await this.releaseHeld());
    }
    return this.emit(await this.through(block.channels));
  }

  async flush(): Promise<AudioData | null> {
    try {
      const first = this.gain === null ? await this.releaseHeld() : null;
      const g = this.gain ?? 1;
      const y = await this.run(this.up.flush(), true);
      const a = this.down.process(y);
      const b = this.down.flush();
      const tail = a.map((c, i) => {
        const rest = joined(c, b[i]!);
        return joined(first?.[i] ?? new Float32Array(0), g === 1 ? rest : rest.map((v) => v / g));
      });
      const last = this.emit(tail);
      // Two roundings of the rate ratio may leave the total a sample short of the input: pad it, as aligned silence.
      const short = this.inputFrames - this.outputFrames;
      if (short <= 0) return last;
      const pad = (c: Float32Array | undefined) => joined(c ?? new Float32Array(0), new Float32Array(short));
      this.outputFrames += short;
      return { sampleRate: this.sampleRate, channels: this.streams.map((_, i) => pad(last?.channels[i])) };
    } finally {
      await this.release();
    }
  }

  /** Frees the sessions and FFTs (flush does; a chain that fails midway may call it). */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    for (const f of this.ffts) f.dispose();
    await this.model.release();
  }
}

function joined(a: Float32Array, b: Float32Array): Float32Array {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const o = new Float32Array(a.length + b.length);
  o.set(a);
  o.set(b, a.length);
  return o;
}
