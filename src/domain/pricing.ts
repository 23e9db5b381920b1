/** Billing rules of the spec's Limits table. Pure functions; rounding exactly as the spec's examples. */

/** TTS: 1 credit per 100 characters, a remainder counts as one (60 -> 1, 215 -> 3). Characters are code points. */
export function ttsCredits(text: string): number {
  return Math.ceil(countCharacters(text) / 100);
}

export function countCharacters(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * What decoders add to a file's own length and is not the client's audio: an encoder's priming and padding (AAC
 * decodes 1024+ samples longer, an MP3 without gapless info up to a frame and a half, WMA about 30 ms). The length
 * limits forgive it, and so does billing: exactly 60 s of audio as ADTS AAC decodes to 60.024 s and cost 2 minutes.
 */
export const CODEC_PADDING_SECONDS = 0.5;

/**
 * Separation and enhancement: seconds / 60 rounded up (61 -> 2, 119 -> 2, 121 -> 3), times the per-minute price,
 * the decoded length less CODEC_PADDING_SECONDS (60.5 s -> 1, 60.6 s -> 2).
 */
export function billableMinutes(seconds: number): number {
  // Rounded to the millisecond first: float noise must not add a minute either.
  const s = Math.round((seconds - CODEC_PADDING_SECONDS) * 1000) / 1000;
  return Math.max(1, Math.ceil(s / 60));
}

export function perMinuteCredits(seconds: number, creditsPerMinute: number): number {
  return billableMinutes(seconds) * creditsPerMinute;
}

/** The least a podcast episode costs, whatever its length: what its create holds (docs/api.md "Billing"). */
export const PODCAST_MIN_CREDITS = 10;

/** Podcast audio: max(10, floor(minutes) x 10): [0,2) min -> 10, [2,3) -> 20. */
export function podcastCredits(seconds: number): number {
  return Math.max(PODCAST_MIN_CREDITS, Math.floor(seconds / 60) * 10);
}

/** What is actually taken: the balance never goes below zero (the spec's podcast rule, applied to every kind). */
export function amountToCharge(price: number, balance: number): number {
  return Math.max(0, Math.min(price, balance));
}
