import { spawn } from 'node:child_process';
import { CODEC_ARGS, fileUrl, SAFE_ARGS } from './ffmpeg.js';

export interface LoudnessTarget {
  /** Integrated loudness, LUFS (EBU R128 / ITU-R BS.1770). */
  integrated: number;
  /** True-peak ceiling, dBTP. */
  truePeak: number;
  /** Loudness range, LU. */
  range: number;
}

export interface LoudnessMeasure {
  input_i: string;
  input_tp: string;
  input_lra: string;
  input_thresh: string;
  target_offset: string;
}

/** Runs ffmpeg and resolves with its stderr (where measurements are printed). */
export function runFfmpeg(ffmpeg: string, args: string[], signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpeg, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-32768);
    });
    const onAbort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', reject);
    child.on('close', (code) => {
      signal?.removeEventListener('abort', onAbort);
      if (code === 0) resolve(stderr);
      else reject(new Error(`ffmpeg failed (exit ${code}): ${stderr.trim().split('\n').slice(-4).join('\n')}`));
    });
  });
}

/**
 * Two-pass loudnorm: measure, then apply one linear gain (with true-peak limiting only where needed),
 * so speech dynamics are kept instead of being pumped by the one-pass dynamic mode.
 */
export async function normalizeLoudness(
  inPath: string,
  outPath: string,
  opts: { ffmpeg: string; target: LoudnessTarget; format: 'mp3' | 'wav' | 'flac'; bitrateKbps?: number; sampleRate?: number; signal?: AbortSignal },
): Promise<LoudnessMeasure> {
  const { integrated: I, truePeak: TP, range: LRA } = opts.target;
  const stderr = await runFfmpeg(
    opts.ffmpeg,
    [...SAFE_ARGS, '-hide_banner', '-i', fileUrl(inPath), '-af', `loudnorm=I=${I}:TP=${TP}:LRA=${LRA}:print_format=json`, '-f', 'null', '-'],
    opts.signal,
  );
  const json = /\{[^{}]*"input_i"[^{}]*\}/s.exec(stderr)?.[0];
  if (!json) throw new Error('loudnorm printed no measurement');
  const m = JSON.parse(json) as LoudnessMeasure;
  // Silence measures as -inf: nothing to normalize, just encode.
  const measurable = Number.isFinite(Number(m.input_i));
  const filter = measurable
    ? `loudnorm=I=${I}:TP=${TP}:LRA=${LRA}:measured_I=${m.input_i}:measured_TP=${m.input_tp}:measured_LRA=${m.input_lra}:measured_thresh=${m.input_thresh}:offset=${m.target_offset}:linear=true`
    : 'anull';
  await runFfmpeg(
    opts.ffmpeg,
    [
      ...SAFE_ARGS, '-hide_banner', '-loglevel', 'error', '-y', '-i', fileUrl(inPath), '-af', filter,
      // loudnorm resamples to 192 kHz internally; bring it back.
      ...(opts.sampleRate ? ['-ar', String(opts.sampleRate)] : []),
      '-map_metadata', '-1', ...CODEC_ARGS[opts.format](opts.bitrateKbps ?? 128), fileUrl(outPath),
    ],
    opts.signal,
  );
  return m;
}

/** Integrated loudness of a file as ffmpeg's ebur128 filter reports it (for checks and tests). */
export async function measureLoudness(path: string, opts: { ffmpeg: string; signal?: AbortSignal }): Promise<{ integrated: number; truePeak: number }> {
  const stderr = await runFfmpeg(opts.ffmpeg, [...SAFE_ARGS, '-hide_banner', '-nostats', '-i', fileUrl(path), '-af', 'ebur128=peak=true', '-f', 'null', '-'], opts.signal);
  const summary = stderr.slice(stderr.lastIndexOf('Summary:'));
  const integrated = Number(/I:\s+(-?[\d.]+|-inf) LUFS/.exec(summary)?.[1] ?? NaN);
  const truePeak = Number(/Peak:\s+(-?[\d.]+|-inf) dBFS/.exec(summary)?.[1] ?? NaN);
  return { integrated, truePeak };
}
