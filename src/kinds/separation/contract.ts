import { z } from 'zod';
import { isModelType, MODEL_TYPES } from '../../domain/vocabulary.js';
import { int, urlString, versioned } from '../fields.js';

export const SEPARATION_TYPES = ['stems', 'accompaniment', 'vocals_accompaniment'] as const;
export type SeparationType = (typeof SEPARATION_TYPES)[number];

/** POST separation/task/create. */
export const SeparationCreateBody = z.object({
  model_type: int().refine(isModelType, { message: `must be one of ${MODEL_TYPES.join(', ')}` }).meta({ enum: [...MODEL_TYPES] }),
  inputurl: urlString(),
  separation_type: z
    .enum(SEPARATION_TYPES)
    .optional()
    .describe('Soundry: stems (default), accompaniment (only the mix minus the vocals/target stems), vocals_accompaniment (both)'),
  output_format: z.enum(['mp3', 'wav', 'flac']).optional(),
});
export type SeparationCreateBody = z.infer<typeof SeparationCreateBody>;

/** Stored with a separation task; read by the worker (and by the query, which echoes the input as video_url). */
export const SeparationParams = versioned(
  z.object({
    v: z.literal(1),
    inputUrl: z.string(),
    modelType: z.number().int(),
    separationType: z.enum(SEPARATION_TYPES),
    format: z.enum(['mp3', 'wav', 'flac']),
  }),
);
export type SeparationParams = z.infer<typeof SeparationParams>;

export const SeparationResult = z.object({
  fileType: z.enum(['audio', 'video']),
  /** output key -> blob key */
  stems: z.record(z.string(), z.string()),
  zipKey: z.string(),
  durationSeconds: z.number(),
  /** Why `engine` is the built-in one although a neural model was wanted (shown as `engine_note`). */
  engineNote: z.string().optional(),
  /** Stem -> why the built-in engine returned it quiet or turned down (shown as `stem_notes`). */
  stemNotes: z.record(z.string(), z.string()).optional(),
});
export type SeparationResult = z.infer<typeof SeparationResult>;

/** What separation/task/get answers in data. */
export const SeparationQueryData = z.looseObject({
  status: z.enum(['waiting', 'success', 'failed']),
  file_type: z.string(),
  video_url: z.string(),
  output: z.record(z.string(), z.string()).describe('Stem name -> result URL (the keys follow model_type)'),
  zip_url: z.string(),
  progress: z.number().optional(),
  duration: z.number().optional(),
  engine: z.string().nullable().optional(),
  engine_note: z.string().optional(),
  stem_notes: z.record(z.string(), z.string()).optional().describe('Stem name -> why the built-in engine returned it silent or turned down'),
  credits: z.number().optional(),
  error: z.string().nullable().optional(),
});
export type SeparationQueryData = z.infer<typeof SeparationQueryData>;

export const SEPARATION_EXAMPLE: z.input<typeof SeparationCreateBody> = { model_type: 501, inputurl: 'https://example.com/song.mp3' };
