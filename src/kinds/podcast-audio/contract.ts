import { z } from 'zod';
import { PODCAST_LIMITS as L } from '../../domain/podcast-limits.js';
import { boundedArray, boundedString, int, versioned } from '../fields.js';
import { Highlight, PodcastScriptQueryData, PodcastScriptResult, ScriptLine } from '../podcast-script/contract.js';

const SubmittedLine = z.object({
  role: boundedString(L.roleChars),
  name: boundedString(L.nameChars).optional(),
  avatar: boundedString(L.avatarChars).nullable().optional(),
  text: boundedString(L.lineChars),
  voice_id: z.union([boundedString(L.voiceIdChars), z.number()]).optional(),
});
const SubmittedHighlight = z.object({
  highlight: boundedString(L.highlightChars),
  index: int(),
  script_start_index: int(),
  script_end_index: int(),
});

/**
 * Highlights name lines of the submitted script by 0-based index (as step 1 writes them, and as `sourceIndex`
 * keeps them past removed lines), inclusive at both ends. One outside the script, or running backwards, has no
 * line to start at: the episode would give it a made-up `start_time` (0, or the first line's). Only
 * the first wrong highlight is named: a hundred of them would make a message nobody reads.
 */
function checkHighlightRanges(lines: number, highlights: Array<z.infer<typeof SubmittedHighlight>>, ctx: z.RefinementCtx): void {
  const last = lines - 1;
  const allowed = last === 0 ? 'must be 0, the script\'s only line (lines count from 0)' : `must be between 0 and ${last}, the script's last line index (lines count from 0)`;
  for (const [i, h] of highlights.entries()) {
    const outside = (['script_start_index', 'script_end_index'] as const).filter((f) => h[f] < 0 || h[f] > last);
    for (const f of outside) ctx.addIssue({ code: 'custom', path: ['hightlights', i, f], message: `${h[f]} is outside the script: ${allowed}` });
    if (outside.length > 0) return;
    if (h.script_start_index > h.script_end_index) {
      const message = `${h.script_start_index} is after hightlights[${i}].script_end_index ${h.script_end_index}: a highlight runs from its first line to its last`;
      return ctx.addIssue({ code: 'custom', path: ['hightlights', i, 'script_start_index'], message });
    }
  }
}

/**
 * POST podcast/audio/create: the script of step 1, unchanged or edited, and the script task's id. Every
 * field is bounded (PODCAST_LIMITS); the script's total, PODCAST_SCRIPT_MAX_CHARS, is checked in prepare().
 */
export const PodcastAudioCreateBody = z
  .object({
    title: boundedString(L.titleChars).optional(),
    processed_content: boundedString(L.processedContentChars).optional(),
    podcast_script: boundedArray(SubmittedLine, L.lines, 'lines').min(1),
    hightlights: boundedArray(SubmittedHighlight, L.highlights, 'highlights').optional(),
    global_id: boundedString(L.globalIdChars).min(1),
  })
  .superRefine((b, ctx) => checkHighlightRanges(b.podcast_script.length, b.hightlights ?? [], ctx));
export type PodcastAudioCreateBody = z.infer<typeof PodcastAudioCreateBody>;

export const PodcastAudioParams = versioned(
  z.object({
    v: z.literal(1),
    scriptTaskId: z.string(),
    title: z.string(),
    processedContent: z.string(),
    language: z.string(),
    /** `sourceIndex` is the line's index in the submitted script (highlights refer to it). */
    lines: z.array(
      z.object({ role: z.string(), name: z.string(), avatar: z.string(), text: z.string(), voiceId: z.number().int(), sourceIndex: z.number().int() }),
    ),
    hightlights: z.array(Highlight),
    /** Carried over from the script task so the audio result has the same fields. */
    sourceData: z.string(),
    trainData: z.string(),
  }),
);
export type PodcastAudioParams = z.infer<typeof PodcastAudioParams>;

/** Stored on success: the script's fields with the episode file and highlight start times. */
export const PodcastAudioResult = PodcastScriptResult.omit({ hightlights: true, podcast_script: true }).extend({
  fileKey: z.string(),
  durationSeconds: z.number(),
  podcast_script: z.array(ScriptLine),
  hightlights: z.array(Highlight.extend({ start_time: z.number() })),
  avatar: z.string(),
  /** Why a host's neural voice did not speak (its model could not be downloaded); shown as `engine_note`. */
  engineNote: z.string().optional(),
});
export type PodcastAudioResult = z.infer<typeof PodcastAudioResult>;

/** What podcast/audio/get answers in data: the script's fields, plus the episode once it is done. */
export const PodcastAudioQueryData = PodcastScriptQueryData.extend({
  hightlights: z.array(Highlight.extend({ start_time: z.number().optional() })),
  file_url: z.string().optional().describe('The episode (MP3) on success'),
  duration: z.number().optional(),
  credits: z.number().optional(),
  engine_note: z.string().optional().describe('Soundry addition: why a built-in voice spoke for a host whose neural voice could not be had'),
});
export type PodcastAudioQueryData = z.infer<typeof PodcastAudioQueryData>;

/** Step 2's body as step 1 answers it (shortened): sent back unchanged or edited. */
export const PODCAST_AUDIO_EXAMPLE: z.input<typeof PodcastAudioCreateBody> = {
  title: 'How bees keep orchards going',
  processed_content: 'Two hosts talk about bees, colonies and orchards.',
  podcast_script: [
    { role: 'A', name: 'Alex', avatar: '', text: 'Welcome! Today we talk about bees.', voice_id: '1001' },
    { role: 'B', name: 'Sam', avatar: '', text: 'They pollinate most flowering plants.', voice_id: '1002' },
  ],
  hightlights: [{ highlight: 'Bees pollinate most flowering plants.', index: 0, script_start_index: 1, script_end_index: 1 }],
  global_id: 'pod_0123456789abcdef',
};
