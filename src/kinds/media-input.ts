import { join } from 'node:path';
import { TaskFailure } from '../domain/errors.js';
import { foldUnplacedChannels, probeMedia, remuxAudio, type MediaInfo, type MediaTools } from '../media/ffmpeg.js';

/** Sample rates audio is made at; a header outside them is refused before anything is allocated for it. */
export const MIN_SAMPLE_RATE = 1_000;
export const MAX_SAMPLE_RATE = 768_000;

export const NOT_AUDIO_MESSAGE = 'The input is not an audio or video file with an audio track';

/**
 * The audio input a media kind works from: probed, its track chosen and its sample rate checked. Every later step
 * (the length count, the engines) reads the returned path's first audio stream.
 * - With several audio tracks, the one marked default (what a player plays) is copied alone into a Matroska file.
 * - A file this ffprobe cannot read is copied the same way by ffmpeg and probed again (the bundled ffprobe crashes
 *   on every MPEG-TS file: all were refused as "not an audio or video file").
 * - More than 8 channels without a layout (a WAV of 9 or 24 channels and no channel mask) are folded to stereo: ffmpeg
 *   places up to 8 by default, and could not downmix more.
 * - A sample rate outside MIN_SAMPLE_RATE..MAX_SAMPLE_RATE fails the task at once, naming it: a WAV header claiming
 *   2,147,483,647 Hz made the engines allocate 51 GB (a RangeError, three attempts, 2-3 GB of RSS kept), and 1-40 Hz
 *   broke the equalizer's FFT, as internal errors.
 * Throws a TaskFailure (not retried) for what the input is; an abort or a tool that cannot start as they are.
 */
export async function openAudioInput(path: string, opts: { media: MediaTools; tmpDir: string; signal: AbortSignal }): Promise<{ path: string; info: MediaInfo }> {
  const { media, tmpDir, signal } = opts;
  // A tool that gives up on the file is an answer (null); an abort stays an abort.
  const orNull = <T>(work: Promise<T>): Promise<T | null> => work.catch((err: unknown) => (signal.aborted ? Promise.reject(err) : null));
  const probe = (file: string) => orNull(probeMedia(file, { ffprobe: media.ffprobe, signal }));
  const copy = (audioIndex: number) => {
    const out = join(tmpDir, `input-track${audioIndex}.mka`);
    return orNull(remuxAudio(path, out, { ffmpeg: media.ffmpeg, audioIndex, signal }).then(() => out));
  };
  let input = path;
  let info = await probe(path);
  /** Reads `made` (a copy or a fold of the input) from now on if it probes with audio; the original says whether it is a video. */
  const adopt = async (made: string | null, original: MediaInfo) => {
    const again = made ? await probe(made) : null;
    if (!made || !again?.hasAudio) return;
    input = made;
    info = { ...again, hasVideo: original.hasVideo, audioIndex: original.audioIndex };
  };
  if (!info) {
    const copied = await copy(0);
    info = copied ? await probe(copied) : null;
    if (copied && info) input = copied;
  } else if (info.hasAudio && info.audioIndex > 0) {
    await adopt(await copy(info.audioIndex), info);
  }
  if (!info || !info.hasAudio || !(info.sampleRate > 0)) throw new TaskFailure(NOT_AUDIO_MESSAGE);
  if (info.sampleRate < MIN_SAMPLE_RATE || info.sampleRate > MAX_SAMPLE_RATE) {
    throw new TaskFailure(
      `The input's audio is at ${info.sampleRate.toLocaleString('en-US')} Hz, outside the sample rates audio is made at ` +
        `(${MIN_SAMPLE_RATE.toLocaleString('en-US')} to ${MAX_SAMPLE_RATE.toLocaleString('en-US')} Hz): its header is likely wrong`,
    );
  }
  if (info.channels > 8 && !info.channelLayout) {
    const folded = join(tmpDir, 'input-stereo.flac');
    await adopt(await orNull(foldUnplacedChannels(input, folded, { ffmpeg: media.ffmpeg, channels: info.channels, signal }).then(() => folded)), info);
  }
  return { path: input, info };
}
