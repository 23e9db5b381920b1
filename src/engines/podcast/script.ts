/**
 * Shared shapes of podcast script generation (step 1 of the spec's podcast flow) and the sizing rules
 * both generators use. Field names follow the spec word for word, including its "hightlights" spelling.
 */
import type { ExtractedSource } from './sources.js';
import { forEachWord } from './words.js';

export interface SpeakerInfo {
  /** 'A', 'B', ... */
  role: string;
  name: string;
  avatar: string;
  voiceId: string;
  gender: 'male' | 'female';
}

export interface ScriptRequest {
  source: ExtractedSource;
  /** The url, or a summary of the text, echoed as the task's source_data. */
  sourceData: string;
  /** A spec podcast language key. */
  language: string;
  /** 1-9, see PODCAST_STYLES. */
  style: number;
  /** 1-7, see DURATION_LEVELS. */
  duration: number;
  speakers: SpeakerInfo[];
}

export type ScriptLine = {
  role: string;
  name: string;
  avatar: string;
  text: string;
  voice_id: string;
};

export type Highlight = {
  highlight: string;
  index: number;
  script_start_index: number;
  script_end_index: number;
};

export interface PodcastScript {
  title: string;
  processed_content: string;
  /** The outline: one section per line. */
  train_data: string;
  podcast_script: ScriptLine[];
  hightlights: Highlight[];
  podcast_script_txt: string;
}

export interface ScriptGenerator {
  readonly id: string;
  generate(req: ScriptRequest, signal: AbortSignal): Promise<PodcastScript>;
}

import { PODCAST_LANGUAGES, type PodcastLanguage } from '../../domain/vocabulary.js';

export { PODCAST_LANGUAGES, type PodcastLanguage };

export const PODCAST_STYLES: Record<number, string> = {
  1: 'Educational',
  2: 'Interview',
  3: 'Deep Dive',
  4: 'Storytelling',
  5: 'News Report',
  6: 'Talk Show',
  7: 'Personal Growth',
  8: 'Funny',
  9: 'Roast',
};

/** Spec's duration levels, in minutes of finished audio. */
export const DURATION_LEVELS: Record<number, { minMinutes: number; maxMinutes: number }> = {
  1: { minMinutes: 0, maxMinutes: 1 },
  2: { minMinutes: 1, maxMinutes: 3 },
  3: { minMinutes: 3, maxMinutes: 5 },
  4: { minMinutes: 5, maxMinutes: 7 },
  5: { minMinutes: 7, maxMinutes: 8 },
  6: { minMinutes: 8, maxMinutes: 10 },
  7: { minMinutes: 10, maxMinutes: 15 },
};

/**
 * Speaking rates per minute of final audio, pauses included: words for space-separated languages,
 * characters (Han, kana, Hangul syllables; Latin words count one each) for zh/zh_yue/ja/ko. Scripts
 * are sized with these so episodes land inside the duration level's range, so they are the rates the
 * default (built-in) podcast voices really produce, measured by `npm run bench -- podcast-audio`
 * ("Spoken rate per language" in bench/results/podcast-audio.md) and rounded to 5. The commonly cited
 * broadcast figures (en 150, zh 250, ja 300) made episodes up to 23% off.
 */
export const SPEAKING_RATE: Record<PodcastLanguage, number> = {
  en: 160,
  es: 155,
  fr: 180,
  pt: 145,
  de: 155,
  ru: 145,
  ar: 210,
  zh: 195,
  zh_yue: 225,
  ja: 265,
  ko: 260,
};

export function isCharCounted(language: string): boolean {
  return language === 'zh' || language === 'zh_yue' || language === 'ja' || language === 'ko';
}

export function rateOf(language: string): number {
  return SPEAKING_RATE[language as PodcastLanguage] ?? SPEAKING_RATE.en;
}

/** Target size (words, or characters for zh/zh_yue/ja/ko) at the middle of the level's range. */
export function targetSize(level: number, language: string): number {
  const range = DURATION_LEVELS[level] ?? DURATION_LEVELS[3]!;
  const minutes = (range.minMinutes + range.maxMinutes) / 2;
  return Math.round(minutes * rateOf(language));
}

/** Estimated speaking minutes of a text in a language, at SPEAKING_RATE. */
export function estimateMinutes(text: string, language: string): number {
  return measureSize(text, language) / rateOf(language);
}

const CJK_CHAR = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]/u;
const isCjk = (ch: string) => CJK_CHAR.test(ch);

/**
 * Size of text in the unit targetSize uses for the language: words, and for zh/zh_yue/ja/ko CJK characters
 * plus the Latin words among them. Counted in one linear pass (words.ts: a regex here overflowed V8's
 * backtracking stack on a multi-megabyte word).
 */
export function measureSize(text: string, language: string): number {
  let count = 0;
  if (!isCharCounted(language)) {
    forEachWord(text, () => count++);
    return count;
  }
  for (const ch of text) if (isCjk(ch)) count++;
  // Latin words embedded in CJK text (names, acronyms) take about as long as one character or two.
  forEachWord(text, () => count++, isCjk);
  return count;
}

/** podcast_script_txt: title on top, then one "Name: text" line per script line. */
export function renderTranscript(script: Pick<PodcastScript, 'title' | 'podcast_script'>): string {
  const lines = script.podcast_script.map((l) => `${l.name || l.role}: ${l.text}`);
  return [script.title, '', ...lines].join('\n');
}
