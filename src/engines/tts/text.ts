/**
 * Text normalization and chunking for TTS: engines get sentence-sized chunks (bounded latency and
 * memory, progress per chunk), and the line structure the user typed becomes audible pauses.
 */

export interface TextChunk {
  text: string;
  /** Silence to insert after this chunk, in seconds. */
  pauseAfterSeconds: number;
}

export const PAUSES = {
  /** Between sentences on the same line (the engines' own final pause is trimmed away). */
  sentence: 0.28,
  /** Where an overlong sentence was cut at a clause boundary. */
  clause: 0.12,
  /** Where it had to be cut at a space or mid-word: keep the flow. */
  forced: 0.04,
  /** A single line break. */
  line: 0.35,
  /** A blank line (paragraph). */
  paragraph: 0.7,
} as const;

/** Ideographic scripts have no spaces and pack more per character: cut them shorter. */
const CJK_LANGUAGES = new Set(['zh', 'zh_yue', 'ja', 'ko']);

export function defaultMaxChunkChars(language: string): number {
  return CJK_LANGUAGES.has(language) ? 80 : 240;
}

export function countCodePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** Abbreviations after which a period does not end the sentence (lower-cased, without the dot). */
const ABBREVIATIONS = new Set([
  'mr', 'mrs', 'ms', 'dr', 'prof', 'st', 'sr', 'jr', 'vs', 'e.g', 'i.e', 'fig', 'approx', 'inc', 'ltd', 'co',
  'sra', 'srta', 'dra', 'mme', 'mlle', 'hr', 'z.b', 'bzw', 'usw', 'ca', 'nr', 'т.е', 'др',
]);

const EMOJI = /[\p{Extended_Pictographic}\u{1F1E6}-\u{1F1FF}\u{1F3FB}-\u{1F3FF}\u200D\uFE0E\uFE0F\u20E3]/gu;

/** Canonical text for speech: NFKC (full-width Latin, half-width kana), no control characters, no emoji. */
export function normalizeText(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/\r\n?/g, '\n')
    .replace(/[\u2028\u2029]/g, '\n')
    // Nobody says "h t t p s colon slash slash w w w dot": a link is read from its host on.
    .replace(/\bhttps?:\/\/(?:www\.)?/giu, '')
    .replace(EMOJI, ' ')
    .replace(/[\u0000-\u0009\u000B-\u001F\u007F-\u009F\u200B\u2060\uFEFF]/g, ' ')
    .replace(/[ \t\u00A0\u3000]+/g, ' ');
}

const SPEAKABLE = /[\p{L}\p{N}]/u;

/** Sentence ends: runs of terminal marks, optionally followed by closing quotes/brackets. */
const SENTENCE_END = /([.!?…]+|[。！？｡]+|[؟۔]+|[!?]+)(["'”’»」』）)\]]*)/gu;

const CJK_CHAR = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;

function splitSentences(line: string): string[] {
  const sentences: string[] = [];
  let start = 0;
  for (const match of line.matchAll(SENTENCE_END)) {
    const end = match.index + match[0].length;
    const mark = match[1]!;
    const next = line[end];
    // NFKC has turned full-width ！？ into ASCII: after CJK text they end a sentence without a space.
    const isCjk = /[。！？｡]/u.test(mark) || (mark !== '.' && CJK_CHAR.test(line[match.index - 1] ?? ''));
    // Latin marks end a sentence only before whitespace or the end ("3.5", "example.com" stay whole).
    if (!isCjk && next !== undefined && !/\s/u.test(next)) continue;
    if (mark === '.') {
      const word = /([\p{L}.]+)$/u.exec(line.slice(start, match.index))?.[1] ?? '';
      // "Dr. Smith", "e.g. this", "J. R. R. Tolkien": not sentence ends.
      if (ABBREVIATIONS.has(word.toLowerCase()) || /^\p{Lu}$/u.test(word)) continue;
    }
    sentences.push(line.slice(start, end));
    start = end;
  }
  sentences.push(line.slice(start));
  return sentences.map((s) => s.trim()).filter((s) => s.length > 0);
}

const CLAUSE_BREAK = /[,;:，、；：،؛—–]/u;

/** Cuts `sentence` into pieces of at most `max` code points, preferring clause marks, then spaces. */
function splitLong(sentence: string, max: number): Array<{ text: string; pause: number }> {
  const chars = Array.from(sentence);
  const pieces: Array<{ text: string; pause: number }> = [];
  let start = 0;
  while (chars.length - start > max) {
    const window = chars.slice(start, start + max);
    let cut = -1;
    let pause: number = PAUSES.forced;
    // Search backwards, but not into the first third: tiny pieces sound choppy.
    const minCut = Math.floor(max / 3);
    for (let i = window.length - 1; i >= minCut; i--) {
      if (CLAUSE_BREAK.test(window[i]!)) {
        cut = i + 1;
        pause = PAUSES.clause;
        break;
      }
    }
    if (cut < 0) {
      for (let i = window.length - 1; i >= minCut; i--) {
        if (window[i] === ' ') {
          cut = i + 1;
          break;
        }
      }
    }
    if (cut < 0) cut = max;
    pieces.push({ text: chars.slice(start, start + cut).join('').trim(), pause });
    start += cut;
  }
  pieces.push({ text: chars.slice(start).join('').trim(), pause: 0 });
  return pieces.filter((p) => p.text.length > 0);
}

/**
 * Splits text into speakable chunks with the pause that follows each. Line breaks become pauses
 * (one newline short, a blank line longer); chunks without letters or digits are dropped, their
 * pause kept. `language` selects the chunk size (scripts differ in how much a character says).
 */
export function splitText(text: string, language: string, opts: { maxChars?: number } = {}): TextChunk[] {
  const max = Math.max(8, opts.maxChars ?? defaultMaxChunkChars(language));
  const chunks: TextChunk[] = [];
  const paragraphs = normalizeText(text).split(/\n[ ]*\n/);
  for (const paragraph of paragraphs) {
    const lines = paragraph.split('\n');
    for (const line of lines) {
      for (const sentence of splitSentences(line)) {
        for (const piece of splitLong(sentence, max)) {
          if (!SPEAKABLE.test(piece.text)) {
            // Punctuation-only pieces say nothing, but they may close a sentence: keep their pause.
            addPause(chunks, piece.pause);
            continue;
          }
          chunks.push({ text: piece.text, pauseAfterSeconds: piece.pause });
        }
        addPause(chunks, PAUSES.sentence);
      }
      addPause(chunks, PAUSES.line);
    }
    addPause(chunks, PAUSES.paragraph);
  }
  const last = chunks[chunks.length - 1];
  if (last) last.pauseAfterSeconds = 0;
  return chunks;
}

/** Pauses do not add up: the strongest boundary wins (a paragraph end is not sentence + line + paragraph). */
function addPause(chunks: TextChunk[], seconds: number): void {
  const last = chunks[chunks.length - 1];
  if (last) last.pauseAfterSeconds = Math.max(last.pauseAfterSeconds, seconds);
}
