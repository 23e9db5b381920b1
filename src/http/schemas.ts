import { z } from 'zod';
import { int } from '../kinds/fields.js';

/** HTTP-only shapes; the kinds' request bodies live in src/kinds/<kind>/contract.ts. */
export const JobIdBody = z.object({ job_id: z.string().min(1) });
export const GlobalIdBody = z.object({ global_id: z.string().min(1) });

export const VoiceListQuery = z.object({
  language: z.string().optional(),
  gender: int().optional(),
  page: int().pipe(z.number().min(1)).default(1),
  page_size: int().pipe(z.number().min(1).max(500)).default(100),
});

export const Envelope = z.object({ code: z.number(), data: z.record(z.string(), z.unknown()), message: z.string() });
