import { z } from 'zod';
import { PODCAST_LANGUAGES } from '../../domain/vocabulary.js';
import { PODCAST_LIMITS as L } from '../../domain/podcast-limits.js';
import { boundedArray, boundedString, int, num, URL_MAX_CHARS, versioned } from '../fields.js';

/**
 * POST podcast/script/create. Every stored field is bounded (PODCAST_LIMITS); `text` by
 * PODCAST_TEXT_MAX_CHARS, which the operator sets, so it is checked in prepare().
 */
export const PodcastScriptCreateBody = z
  .object({
    source_type: int().pipe(z.number().min(1).max(4)).meta({ enum: [1, 2, 3, 4], description: '1 website, 2 video-sharing link, 3 attachment, 4 plain text' }),
    speakers: boundedArray(int(), L.speakers, 'speakers').optional(),
    style: int().pipe(z.number().min(1).max(9)).meta({ enum: [1, 2, 3, 4, 5, 6, 7, 8, 9], description: '1 Educational, 2 Interview, 3 Deep Dive, 4 Storytelling, 5 News Report, 6 Talk Show, 7 Personal Growth, 8 Funny, 9 Roast' }).optional(),
    duration: int().pipe(z.number().min(1).max(7)).meta({ enum: [1, 2, 3, 4, 5, 6, 7], description: 'Length level: 1 0-1 min, 2 1-3, 3 3-5, 4 5-7, 5 7-8, 6 8-10, 7 10-15' }).optional(),
    use_mode: boundedString(L.useModeChars).optional(),
    commercial_use: num().optional(),
    language: z.enum(PODCAST_LANGUAGES).optional(),
    text: z.string().optional(),
    url: boundedString(URL_MAX_CHARS).optional(),
  })
  .superRefine((b, ctx) => {
    // Scripts are conversations: one host greeted and answered herself ("with my co-host Emma ... Hi Emma"), and
    // the same voice twice did too, renamed ("James ... here with James B"). Every podcast language has several
    // voices of each gender, so two different ones can always be had. An empty list still means the default pair.
    const speakers = b.speakers ?? [];
    if (speakers.length === 1) {
      ctx.addIssue({ code: 'custom', path: ['speakers'], message: 'a podcast has two or more hosts: give two or more voice ids, or none for the default pair (got one)' });
    }
    const again = speakers.findIndex((id, i) => speakers.indexOf(id) !== i);
    if (again >= 0) {
      const id = speakers[again]!;
      ctx.addIssue({ code: 'custom', path: ['speakers', again], message: `voice ${id} is already speakers[${speakers.indexOf(id)}]: each host needs a voice of their own` });
    }
    if (b.source_type === 4 && !b.text?.trim()) ctx.addIssue({ code: 'custom', path: ['text'], message: 'required when source_type is 4' });
    if ([1, 2, 3].includes(b.source_type) && !b.url?.trim()) ctx.addIssue({ code: 'custom', path: ['url'], message: 'required when source_type is 1, 2 or 3' });
  });
export type PodcastScriptCreateBody = z.infer<typeof PodcastScriptCreateBody>;

export const PodcastScriptParams = versioned(
  z.object({
    v: z.literal(1),
    sourceType: z.number().int(),
    url: z.string().nullable(),
    text: z.string().nullable(),
    speakers: z.array(z.number().int()).nullable(),
    style: z.number().int(),
    duration: z.number().int(),
    language: z.string().nullable(),
    useMode: z.string().nullable(),
    commercialUse: z.number().nullable(),
  }),
);
export type PodcastScriptParams = z.infer<typeof PodcastScriptParams>;

/** A script line as the spec shows it (voice_id a string). Loose: a stored field the schema does not name is kept, not dropped. */
export const ScriptLine = z.looseObject({ role: z.string(), name: z.string(), avatar: z.string(), text: z.string(), voice_id: z.string() });
export const Highlight = z.looseObject({ highlight: z.string(), index: z.number(), script_start_index: z.number(), script_end_index: z.number() });

/** Stored on success: the spec's fields (hightlights spelled as the spec does), plus the language used. */
export const PodcastScriptResult = z.object({
  title: z.string(),
  processed_content: z.string(),
  train_data: z.string(),
  podcast_script: z.array(ScriptLine),
  hightlights: z.array(Highlight),
  podcast_script_txt: z.string(),
  source_data: z.string(),
  language: z.string(),
  avatar: z.string().nullable(),
  /** Why `engine` is the built-in generator although the local language model was wanted (shown as `engine_note`). */
  engineNote: z.string().optional(),
});
export type PodcastScriptResult = z.infer<typeof PodcastScriptResult>;

/** What podcast/script/get answers in data (podcast/audio/get adds file_url). */
export const PodcastScriptQueryData = z.looseObject({
  status: z.enum(['waiting', 'success', 'failed']),
  global_id: z.string(),
  source_data: z.string(),
  train_data: z.string(),
  podcast_script: z.array(ScriptLine),
  hightlights: z.array(Highlight),
  processed_content: z.string(),
  title: z.string(),
  avatar: z.string().nullable(),
  podcast_script_txt: z.string(),
  create_time: z.number().describe('Unix seconds'),
  language: z.string().optional(),
  progress: z.number().optional(),
  engine: z.string().nullable().optional(),
  engine_note: z.string().optional().describe('On success: why the built-in generator wrote the script although the local language model was wanted'),
  error: z.string().nullable().optional(),
});
export type PodcastScriptQueryData = z.infer<typeof PodcastScriptQueryData>;

export const PODCAST_SCRIPT_EXAMPLE: z.input<typeof PodcastScriptCreateBody> = {
  source_type: 4,
  text: 'Bees pollinate most flowering plants. A colony can hold fifty thousand bees in summer. Beekeepers move hives to orchards in spring.',
  speakers: [],
  style: 1,
  duration: 2,
  use_mode: 'ai',
  commercial_use: 0,
  language: 'en',
};
