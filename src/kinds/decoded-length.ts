import { TaskFailure } from '../domain/errors.js';
import { countDecodedFrames } from '../media/ffmpeg-stream.js';
import { CODEC_PADDING_SECONDS, perMinuteCredits } from '../domain/pricing.js';
import type { JobContext } from '../jobs/handler.js';

/**
 * Decoders and encoders pad a few milliseconds (an MP3 without gapless info decodes up to one frame
 * longer than it was made): a file made to the limit's length must not be refused for that (nor billed: pricing).
 */
export const LIMIT_SLACK_SECONDS = CODEC_PADDING_SECONDS;

/** The frame count past which an input is over `maxSeconds` at `sampleRate` (LIMIT_SLACK_SECONDS included). */
export function limitFrames(maxSeconds: number, sampleRate: number): number {
  return Math.ceil((maxSeconds + LIMIT_SLACK_SECONDS) * sampleRate);
}

export function overLimitMessage(maxSeconds: number): string {
  return `The input holds more than ${maxSeconds} s of audio; the limit is ${maxSeconds} s`;
}

/**
 * The length every media kind limits and bills by: the audio the decoder really yields, never the
 * duration a header claims (a 1 KB MP3 can claim ten hours, a long WAV a few seconds). Decoding stops at
 * the limit, so an over-long input costs at most the limit's worth of decoding before it is refused.
 * Throws a TaskFailure naming the limit, or saying there is no audio to decode.
 */
export async function decodedFrames(
  path: string,
  opts: { ffmpeg: string; sampleRate: number; maxSeconds: number; signal?: AbortSignal; overMessage?: (maxSeconds: number) => string },
): Promise<number> {
  const maxFrames = limitFrames(opts.maxSeconds, opts.sampleRate);
  const counted = await countDecodedFrames(path, { ffmpeg: opts.ffmpeg, sampleRate: opts.sampleRate, maxFrames, ...(opts.signal ? { signal: opts.signal } : {}) })
    .catch((err: unknown) => {
      // ffmpeg ran and gave up on the file: bad input, not worth a retry. Anything else (abort, spawn) as is.
      if (!opts.signal?.aborted && err instanceof Error && err.message.startsWith('ffmpeg failed')) {
        throw new TaskFailure('The input could not be decoded as audio');
      }
      throw err;
    });
  if (counted.over) throw new TaskFailure((opts.overMessage ?? overLimitMessage)(opts.maxSeconds));
  if (counted.frames === 0) throw new TaskFailure('The input has no decodable audio');
  return counted.frames;
}

/**
 * Separation and enhancement: the price of the decoded length, held before the costly work, so that an input
 * the account cannot pay for fails at once, uncharged, instead of being processed for whatever balance is left.
 */
export async function reservePrice(ctx: Pick<JobContext, 'reserve'>, seconds: number, creditsPerMinute: number): Promise<void> {
  await ctx.reserve(perMinuteCredits(seconds, creditsPerMinute), `the input's ${Math.round(seconds * 10) / 10} s of audio`);
}
