import { z } from 'zod';
import { ENHANCE_FLAGS } from '../../domain/vocabulary.js';
import { urlString, versioned } from '../fields.js';

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
