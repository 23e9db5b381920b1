import { z } from 'zod';
import { int } from '../kinds/fields.js';
import { TTS_LANGUAGES } from '../domain/vocabulary.js';

/** HTTP-only shapes; the kinds' request bodies live in src/kinds/<kind>/contract.ts. */
export const JobIdBody = z.object({ job_id: z.string().min(1) });
export const GlobalIdBody = z.object({ global_id: z.string().min(1) });

/**
 * The voice lists' filters. A language or gender no voice can have is refused (100002 naming the values), not
 * answered with an empty list: `language=english` or `gender=0` is a client's mistake, and an empty page hid it.
 */
export const VoiceListQuery = z.object({
  language: z.enum(['all', ...TTS_LANGUAGES]).optional(),
  gender: int()
    .pipe(z.number().refine((g) => g === 1 || g === 2, { error: '1 (male) or 2 (female)' }))
    .optional(),
  page: int().pipe(z.number().min(1)).default(1),
  page_size: int().pipe(z.number().min(1).max(500)).default(100),
});

export const Envelope = z.object({ code: z.number(), data: z.record(z.string(), z.unknown()), message: z.string() });
