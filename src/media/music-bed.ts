import { fileUrl, INPUT_FORMATS, SAFE_ARGS } from './ffmpeg.js';
import { runFfmpeg } from './loudnorm.js';

export interface MusicBedOptions {
  ffmpeg: string;
  /** Seconds of the voice track's opening silence where music plays alone. */
  introSeconds: number;
  /** Seconds of the voice track's closing silence where music returns, then fades out. */
  outroSeconds: number;
  durationSeconds: number;
  sampleRate: number;
  signal?: AbortSignal;
}

/**
 * Lays a music bed under a voice track: music loops for the whole length, fades in, is ducked by a
 * sidechain compressor keyed on the voice whenever someone speaks, and fades out at the end.
 * The output is a float WAV for the loudness pass that follows.
 */
export async function mixMusicBed(voicePath: string, musicPath: string, outPath: string, o: MusicBedOptions): Promise<void> {
  const d = o.durationSeconds.toFixed(3);
  const fadeOutStart = Math.max(0, o.durationSeconds - Math.min(3, o.outroSeconds)).toFixed(3);
  const graph = [
    `[1:a]aresample=${o.sampleRate},aformat=channel_layouts=mono,atrim=duration=${d},afade=t=in:d=1,afade=t=out:st=${fadeOutStart}:d=${Math.min(3, o.outroSeconds)},volume=0.35[m]`,
    '[0:a]asplit=2[v][key]',
    // Ducking: about 15 dB under speech, quick to duck, slow to come back between turns.
    '[m][key]sidechaincompress=threshold=0.015:ratio=12:attack=15:release=600:makeup=1[ducked]',
    // amix halves each input; the loudness pass after this sets the final level anyway.
    '[v][ducked]amix=inputs=2:duration=first:dropout_transition=0,volume=2[out]',
  ].join(';');
  await runFfmpeg(
    o.ffmpeg,
    [
      ...SAFE_ARGS, '-hide_banner', '-loglevel', 'error', '-y',
      '-i', fileUrl(voicePath),
      '-stream_loop', '-1', '-format_whitelist', INPUT_FORMATS, '-i', fileUrl(musicPath),
      '-filter_complex', graph, '-map', '[out]', '-t', d, '-c:a', 'pcm_f32le', fileUrl(outPath),
    ],
    o.signal,
  );
}
