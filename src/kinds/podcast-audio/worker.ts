import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { podcastCredits } from '../../domain/pricing.js';
import type { BlobStore } from '../../ports/blob-store.js';
import { encodeWav } from '../../media/wav.js';
import { measureLoudness, type LoudnessTarget } from '../../media/loudnorm.js';
import { resample } from '../../media/resample.js';
import { mixMusicBed } from '../../media/music-bed.js';
import { renderTranscript } from '../../engines/podcast/script.js';
import type { JobContext, JobOutcome, TaskHandler } from '../../jobs/handler.js';
import type { EngineThreads } from '../threads.js';
import type { VoiceModels } from '../tts/voice-models.js';
import type { EnhanceThreadInput } from '../enhance/thread.js';
import { PodcastAudioParams, type PodcastAudioResult } from './contract.js';

const RATE = 24000;
/** Turn-taking: a new speaker answers after a breath; the same speaker continues sooner. */
const PAUSE_NEW_SPEAKER = 0.45;
const PAUSE_SAME_SPEAKER = 0.25;
const LEAD_IN = 0.3;
const TAIL = 0.6;
/** With a music bed: music alone before the first line and after the last. */
const MUSIC_INTRO = 4;
const MUSIC_OUTRO = 4;
/**
 * The limiter's ceiling starts this far under the episode's: MP3 coding lifts true peaks (measured up
 * to +0.4 dB, enhance-task.ts), and the MP3 is what listeners' meters read.
 */
const MP3_PEAK_MARGIN_DB = 0.6;

/** Podcast step 2: every line in its speaker's voice, joined with natural pauses, loudness-normalized MP3. */
export class PodcastAudioHandler implements TaskHandler {
  readonly kind = 'podcast_audio' as const;

  constructor(
    private readonly deps: { threads: EngineThreads; blobs: BlobStore; ffmpeg: string; target: LoudnessTarget; musicFile?: string; modelsDir: string; models: VoiceModels },
  ) {}

  async run(ctx: JobContext): Promise<JobOutcome> {
    const p = PodcastAudioParams.parse(ctx.task.params);
    const pieces: Float32Array[] = [];
    const starts: number[] = [];
    const music = this.deps.musicFile;
    const lead = music ? MUSIC_INTRO : LEAD_IN;
    let cursor = Math.round(lead * RATE);
    let engine = '';
    // Hosts' neural voices not installed yet are downloaded first (MODELS_AUTO_PULL), in the first tenth of the
    // progress; one that cannot be had is spoken by a built-in voice, and the episode says so once per reason.
    const hosts = [...new Set(p.lines.map((l) => l.voiceId))];
    const unavailable = new Map<number, string>();
    for (const [k, voiceId] of hosts.entries()) {
      const why = await this.deps.models.ensure(voiceId, { signal: ctx.signal, onProgress: (f) => ctx.onProgress((0.1 * (k + f)) / hosts.length) });
      if (why) unavailable.set(voiceId, why);
    }
    const notes = new Set<string>();
    for (const [i, line] of p.lines.entries()) {
      const why = unavailable.get(line.voiceId);
      const out = await this.deps.threads.run(
        'tts',
        { text: line.text, language: 'all', voiceId: line.voiceId, emotion: 0, speed: 1, ...(why ? { unavailable: why } : {}) },
        { signal: ctx.signal, onProgress: (f) => ctx.onProgress(0.1 + (0.75 * (i + f)) / p.lines.length) },
      );
      if (i > 0) cursor += Math.round((line.role === p.lines[i - 1]!.role ? PAUSE_SAME_SPEAKER : PAUSE_NEW_SPEAKER) * RATE);
      const samples = resample(out.samples, out.sampleRate, RATE);
      starts.push(cursor / RATE);
      pieces.push(samples);
      cursor += samples.length;
      engine = engine && engine !== out.engine ? 'mixed' : out.engine;
      if (out.engineNote) notes.add(out.engineNote);
    }
    const total = cursor + Math.round((music ? MUSIC_OUTRO : TAIL) * RATE);
    const mix = new Float32Array(total);
    for (const [i, piece] of pieces.entries()) mix.set(piece, Math.round(starts[i]! * RATE));
    const voicePath = join(ctx.tmpDir, 'voices.wav');
    await writeFile(voicePath, encodeWav({ sampleRate: RATE, channels: [mix] }, 32));
    let wavPath = voicePath;
    if (music) {
      wavPath = join(ctx.tmpDir, 'mix.wav');
      await mixMusicBed(voicePath, music, wavPath, {
        ffmpeg: this.deps.ffmpeg,
        introSeconds: MUSIC_INTRO,
        outroSeconds: MUSIC_OUTRO,
        durationSeconds: total / RATE,
        sampleRate: RATE,
        signal: ctx.signal,
      });
    }
    const mp3Path = join(ctx.tmpDir, 'podcast.mp3');
    await this.master(wavPath, mp3Path, total, ctx);
    ctx.onProgress(0.97);
    const fileKey = `tasks/${ctx.task.id}/podcast.mp3`;
    await this.deps.blobs.putFile(fileKey, mp3Path, 'audio/mpeg');
    const durationSeconds = total / RATE;
    const startOf = (scriptIndex: number) => {
      const k = p.lines.findIndex((l) => l.sourceIndex >= scriptIndex);
      return Math.round((k >= 0 ? starts[k]! : 0) * 100) / 100;
    };
    const podcastScript = p.lines.map((l) => ({ role: l.role, name: l.name, avatar: l.avatar, text: l.text, voice_id: String(l.voiceId) }));
    const result: PodcastAudioResult = {
      fileKey,
      durationSeconds: Math.round(durationSeconds * 1000) / 1000,
      language: p.language,
      title: p.title,
      processed_content: p.processedContent,
      source_data: p.sourceData,
      train_data: p.trainData,
      podcast_script: podcastScript,
      hightlights: p.hightlights.map((h) => ({ ...h, start_time: startOf(h.script_start_index) })),
      podcast_script_txt: renderTranscript({ title: p.title, podcast_script: podcastScript }),
      avatar: p.lines[0]?.avatar ?? '',
      ...(notes.size > 0 ? { engineNote: [...notes].join('. ') } : {}),
    };
    return {
      result,
      engine: `tts:${engine}`,
      price: podcastCredits(durationSeconds),
      audioSeconds: durationSeconds,
    };
  }

  /**
   * Loudness and true peak through the enhancement's normalize (BS.1770 meter, look-ahead limiter on the
   * 4x-interpolated peak, aimed for the loudness the limiter takes), in an engine thread, then checked on
   * the MP3 with ffmpeg's ebur128: coding moves both, so a peak over the ceiling lowers the limiter's
   * ceiling by the overshoot and a level off the target shifts the target, for at most three passes.
   * (A sample-peak limiter here let episodes reach -1.4 dBTP against the -1.5 ceiling.)
   */
  private async master(wavPath: string, mp3Path: string, frames: number, ctx: JobContext): Promise<void> {
    const { integrated: target, truePeak: ceiling } = this.deps.target;
    let aimLufs = target;
    let limit = ceiling - MP3_PEAK_MARGIN_DB;
    for (let pass = 0; pass < 3; pass++) {
      const job: EnhanceThreadInput = {
        inputPath: wavPath, outPath: mp3Path, format: 'mp3', sampleRate: RATE, channels: 1, totalFrames: frames,
        flags: ['normalize'], modelsDir: this.deps.modelsDir, ffmpeg: this.deps.ffmpeg, targetLufs: aimLufs,
        denoiser: 'rnnoise', ceilingDbtp: limit,
      };
      await this.deps.threads.run('enhance', job, { signal: ctx.signal, onProgress: (f) => ctx.onProgress(0.85 + 0.04 * (pass + f)) });
      const got = await measureLoudness(mp3Path, { ffmpeg: this.deps.ffmpeg, signal: ctx.signal });
      // Silence has no loudness to correct.
      if (!Number.isFinite(got.integrated)) return;
      const over = got.truePeak - ceiling;
      const short = target - got.integrated;
      if (over <= 0 && Math.abs(short) <= 0.2) return;
      if (over > 0) limit -= over + 0.1;
      if (Math.abs(short) > 0.2) aimLufs = Math.min(target + 3, Math.max(target - 3, aimLufs + short));
    }
  }
}
