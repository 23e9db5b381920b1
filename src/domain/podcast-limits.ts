/**
 * Size limits of the podcast steps (docs/api.md "Podcasts", "Limits of the podcast steps"). Script creation is
 * free and its fields are kept for TASK_TTL_SECONDS, so every field has a ceiling, checked at create before
 * anything is stored. The ceilings sit far above what a real episode needs: a level-7 episode (15 minutes)
 * is about 2,500 words, some 15,000-20,000 characters, in 40-200 lines.
 */
export const PODCAST_LIMITS = {
  useModeChars: 100,
  /** Hosts: roles are A-H. */
  speakers: 8,
  /** podcast_script lines (audio create). */
  lines: 1000,
  /** One line's text: what one TTS task takes by default (TTS_MAX_CHARS). */
  lineChars: 5000,
  roleChars: 64,
  nameChars: 200,
  avatarChars: 4096,
  voiceIdChars: 32,
  titleChars: 500,
  processedContentChars: 20_000,
  /** train_data, the outline a script task returns. */
  outlineChars: 20_000,
  highlights: 100,
  highlightChars: 2000,
  globalIdChars: 100,
} as const;

/** PODCAST_TEXT_MAX_CHARS: pasted source text (source_type 4), the same as a fetched source is cut to. */
export const DEFAULT_PODCAST_TEXT_MAX_CHARS = 200_000;

/** PODCAST_SCRIPT_MAX_CHARS: all lines of a script together (audio create), about 50 minutes of speech. */
export const DEFAULT_PODCAST_SCRIPT_MAX_CHARS = 50_000;

/** The message part after the field name, the same for every size limit: "too long: 5242880 characters, at most 200000". */
export function tooLong(count: number, max: number, unit = 'characters'): string {
  return `too long: ${count} ${unit}, at most ${max}`;
}

/** Characters (code points, as TTS counts them) of all lines' text together: what PODCAST_SCRIPT_MAX_CHARS bounds. */
export function scriptCharacters(lines: ReadonlyArray<{ text: string }>): number {
  let n = 0;
  for (const line of lines) for (const _ of line.text) n++;
  return n;
}
