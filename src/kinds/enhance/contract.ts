import { z } from 'zod';
import { ENHANCE_FLAGS } from '../../domain/vocabulary.js';
import { urlString, versioned } from '../fields.js';

/**
 * What to send instead when a file is over ENHANCE_MAX_BYTES, said wherever that limit refuses one: the worker's
 * failed task, the upload with `?kind=enhance` and the create with an own upload (one text, so they never drift).
 * The spec's 10 MB refuses a 2-minute 16-bit stereo WAV (about 21 MB): say what fits and what the operator can change.
 */
export const ENHANCE_OVER_LIMIT_HINT =
  'send a compressed format (MP3, Opus, FLAC: minutes of audio fit in a few MB) without embedded pictures (cover art counts), or the server operator can raise ENHANCE_MAX_BYTES';

/** POST enhance/task/create: every flag optional; unknown or non-boolean flags are refused naming the field. */
export const EnhanceCreateBody = z.object({
  inputurl: urlString(),
  enhance_type: z.strictObject(Object.fromEntries(ENHANCE_FLAGS.map((f) => [f, z.boolean().optional()]))),
});
export type EnhanceCreateBody = z.infer<typeof EnhanceCreateBody>;

export const EnhanceParams = versioned(
  z.object({
    v: z.literal(1),
    inputUrl: z.string(),
    /** The flags that are on; omitted flags are off, and none on means autoid (docs/api.md). */
    flags: z.array(z.enum(ENHANCE_FLAGS)),
  }),
);
export type EnhanceParams = z.infer<typeof EnhanceParams>;

export const EnhanceResult = z.object({
  outputKey: z.string(),
  fileSize: z.number(),
  durationSeconds: z.number(),
  inputSeconds: z.number(),
  stages: z.array(z.string()),
  reasons: z.record(z.string(), z.string()),
});
export type EnhanceResult = z.infer<typeof EnhanceResult>;

/** What enhance/task/get answers in data. */
export const EnhanceQueryData = z.looseObject({
  status: z.enum(['waiting', 'success', 'failed']),
  output: z.string(),
  result: z.string(),
  file_size: z.number(),
  tasks_position: z.number().optional(),
  progress: z.number().optional(),
  duration: z.number().optional(),
  stages: z.array(z.string()).optional(),
  reasons: z.record(z.string(), z.string()).optional(),
  engine: z.string().nullable().optional(),
  credits: z.number().optional(),
  error: z.string().nullable().optional(),
});
export type EnhanceQueryData = z.infer<typeof EnhanceQueryData>;

export const ENHANCE_EXAMPLE: z.input<typeof EnhanceCreateBody> = {
  inputurl: 'https://example.com/interview.mp3',
  enhance_type: { remove_noise: true, long_silences: true, normalize: true },
};
