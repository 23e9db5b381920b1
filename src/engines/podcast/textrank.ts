/**
 * Extractive key points: sentences ranked by TextRank (PageRank over a sentence-similarity graph,
 * Mihalcea & Tarau 2004). CJK text is split on its own punctuation and compared by character bigrams,
 * which needs no dictionary; other languages by word tokens.
 */
import { wordsOf } from './words.js';

export interface Sentence {
  /** Position in the document. */
  index: number;
  /** Paragraph number, so elaboration can stay inside the paragraph. */
  paragraph: number;
  text: string;
  tokens: string[];
  score: number;
}

const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]/u;

/** Spoken text should not carry citations, footnote marks or links. */
export function speakable(s: string): string {
  return s
    .replace(/\((?:[^()]*?\bet al\.?[^()]*|[^()]*\b(?:19|20)\d{2}[a-z]?(?:;[^()]*)?)\)/g, '')
    .replace(/\[\d+(?:[,–-]\d+)*\]|\[citation needed\]|\[edit\]/gi, '')
    // A URL inside brackets must not take the closing bracket with it ("Unicode (https://…) is" -> "Unicode is").
    .replace(/(?:https?:\/\/|www\.)[^\s()[\]<>"”']+/g, '')
    .replace(/\(\s*[,;:]?\s*\)|\[\s*\]/g, '')
    .replace(/\s+([,.;:!?])/g, '$1')
    .replace(/\s{2,}/g, ' ')
    .trim();
}

export function splitSentences(text: string): Array<{ text: string; paragraph: number }> {
  const out: Array<{ text: string; paragraph: number }> = [];
  text.split(/\n\s*\n/).forEach((para, p) => {
    const flat = para.replace(/\s*\n\s*/g, ' ').trim();
    if (!flat) return;
    // Split after terminal punctuation (optionally closed by quotes/brackets); Latin needs a following space
    // and an upper-case or digit start, so "e.g. this" and "U.S. law" stay whole more often.
    const parts = flat.match(/[^。！？!?.]+(?:[。！？]+[」』”’）)]*|[!?]+["”’)]*(?=\s|$)|\.(?:["”’)]*)(?=\s+[\p{Lu}\p{N}"“‘(]|\s*$)|\.)|[^。！？!?.]+$/gu) ?? [flat];
    let buf = '';
    for (const [k, part] of parts.entries()) {
      buf += part;
      // A period between Latin letters or digits is inside a word: a file name, a version, a domain ("sources.list").
      const next = parts[k + 1];
      if (next !== undefined && /[A-Za-z0-9]\.$/.test(part) && /^[A-Za-z0-9]/.test(next)) continue;
      // Abbreviations and initials ("Dr.", "J. R.") would otherwise end a sentence.
      if (/(?:\b[\p{Lu}]|\b(?:Mr|Mrs|Ms|Dr|Prof|St|vs|etc|e\.g|i\.e|Fig|No|Sr|Jr|Inc|Ltd|Co|Sra|Sr|Nr|bzw|z\.B|ca))\.$/u.test(buf.trim())) continue;
      const s = buf.trim();
      if (s) out.push({ text: s, paragraph: p });
      buf = '';
    }
    if (buf.trim()) out.push({ text: buf.trim(), paragraph: p });
  });
  return out;
}

export function tokenize(s: string): string[] {
  const lower = s.toLowerCase();
  if (CJK.test(lower)) {
    const chars = [...lower.replace(/[^\p{L}\p{N}]/gu, '')];
    const grams: string[] = [];
    for (let i = 0; i + 1 < chars.length; i++) grams.push(chars[i]! + chars[i + 1]!);
    return grams;
  }
  return wordsOf(lower).filter((w) => w.length > 2);
}

/** Sentences with TextRank scores (summing to about the sentence count); document order kept. */
/**
 * A numbered heading or table-of-contents entry ("1.2.2 ファイルシステムの内側.", "3.1 Installing packages.",
 * "11 データー変換11.1 テキストデーター変換ツール."): not a sentence, and a manual's table of contents
 * must not use up the sentences ranked.
 */
export function headingLike(t: string): boolean {
  if (/^\d+(?:\.\d+)+\.?\s/.test(t)) return true;
  return CJK.test(t) && /\d+\.\d+\s*\S/.test(t) && !/[。！？]/.test(t);
}

export function rankSentences(text: string, maxSentences = 600): Sentence[] {
  const raw = splitSentences(text).filter((s) => !headingLike(s.text)).slice(0, maxSentences);
  const sentences: Sentence[] = raw.map((s, index) => ({ index, paragraph: s.paragraph, text: s.text, tokens: tokenize(s.text), score: 0 }));
  const n = sentences.length;
  if (!n) return sentences;
  // Tokens in nearly every sentence are function words: drop them before comparing.
  const df = new Map<string, number>();
  for (const s of sentences) for (const t of new Set(s.tokens)) df.set(t, (df.get(t) ?? 0) + 1);
  const sets = sentences.map((s) => new Set(s.tokens.filter((t) => n < 8 || (df.get(t) ?? 0) < n * 0.4)));
  const w: number[][] = sets.map(() => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const a = sets[i]!;
      const b = sets[j]!;
      if (a.size < 2 || b.size < 2) continue;
      let common = 0;
      for (const t of a) if (b.has(t)) common++;
      if (!common) continue;
      const sim = common / (Math.log(a.size) + Math.log(b.size));
      w[i]![j] = sim;
      w[j]![i] = sim;
    }
  }
  const outSum = w.map((row) => row.reduce((x, y) => x + y, 0));
  let score = new Array<number>(n).fill(1);
  for (let iter = 0; iter < 40; iter++) {
    const next = new Array<number>(n).fill(0.15);
    for (let j = 0; j < n; j++) {
      if (!outSum[j]) continue;
      const share = (0.85 * score[j]!) / outSum[j]!;
      const row = w[j]!;
      for (let i = 0; i < n; i++) if (row[i]) next[i]! += row[i]! * share;
    }
    const delta = next.reduce((d, v, i) => d + Math.abs(v - score[i]!), 0);
    score = next;
    if (delta < 1e-4 * n) break;
  }
  sentences.forEach((s, i) => (s.score = score[i]!));
  return sentences;
}

/** Whether a sentence can stand alone as a spoken key point (not a fragment, table row or caption). */
export function usableKeyPoint(s: Sentence): boolean {
  const t = s.text;
  if (headingLike(t)) return false;
  const cjk = CJK.test(t);
  const size = cjk ? [...t].length : t.split(/\s+/).length;
  if (cjk ? size < 10 || size > 160 : size < 6 || size > 60) return false;
  const letters = (t.match(/\p{L}/gu) ?? []).length;
  return letters / t.length > 0.6 && /[.!?。！？」”"')]$/u.test(t);
}

/**
 * The sentence's most characteristic word (frequent in the document, rare across sentences), used as
 * the spoken topic of a question; null when nothing fits (or for CJK, where words are not delimited).
 */
export interface TermStats {
  tf: Map<string, number>;
  df: Map<string, number>;
  sentences: number;
}

/** Document-wide term and sentence frequencies, computed once per document for topicWord. */
export function termStats(all: Sentence[]): TermStats {
  const tf = new Map<string, number>();
  const df = new Map<string, number>();
  for (const x of all) {
    for (const t of x.tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const t of new Set(x.tokens)) df.set(t, (df.get(t) ?? 0) + 1);
  }
  return { tf, df, sentences: all.length };
}

// Words after these are nouns: a question "about {topic}" needs one ("Tell us about represented" does not work).
const DETERMINERS: Record<string, Set<string>> = {
  en: new Set(['the', 'a', 'an', 'this', 'these', 'that', 'those', 'its', 'their', 'our', 'your', 'his', 'her', 'each', 'every']),
  es: new Set(['el', 'la', 'los', 'las', 'un', 'una', 'unos', 'unas', 'este', 'esta', 'estos', 'estas', 'su', 'sus', 'del', 'al']),
  fr: new Set(['le', 'la', 'les', 'un', 'une', 'des', 'du', 'ce', 'cet', 'cette', 'ces', 'son', 'sa', 'ses', 'leur', 'leurs', 'au', 'aux']),
  pt: new Set(['o', 'a', 'os', 'as', 'um', 'uma', 'uns', 'umas', 'este', 'esta', 'estes', 'estas', 'seu', 'sua', 'seus', 'suas', 'do', 'da', 'dos', 'das', 'no', 'na', 'nos', 'nas']),
};

/** Whether `word` (lower case) is used as a noun in the sentence, judged from its spelling and neighbour. */
function nounInSentence(word: string, text: string, language: string): boolean {
  if (language === 'de') {
    // German nouns are capitalised; the first word of a sentence proves nothing.
    const m = new RegExp(`(?<=\\s)(${escapeRe(word)})(?![\\p{L}\\p{N}])`, 'iu').exec(text);
    return Boolean(m && /^\p{Lu}/u.test(m[1]!));
  }
  const dets = DETERMINERS[language];
  if (!dets) return true;
  const words = wordsOf(text.toLowerCase());
  for (let i = 0; i < words.length; i++) {
    if (words[i] !== word) continue;
    const prev = words[i - 1] ?? '';
    // French and Italian-style elision: "l’utilisateur".
    if (dets.has(prev) || /^[ld]['’]/.test(word)) return true;
  }
  return false;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function topicWord(s: Sentence, stats: TermStats, language = 'en'): string | null {
  if (CJK.test(s.text)) return null;
  const { tf, df } = stats;
  const all = { length: stats.sentences };
  let best: string | null = null;
  let bestScore = 0;
  for (const t of new Set(s.tokens)) {
    if (t.length < 4 || /^\d/.test(t)) continue;
    const d = df.get(t) ?? 1;
    if (d > all.length * 0.3 && all.length > 5) continue;
    if (!nounInSentence(t, s.text, language)) continue;
    const sc = Math.log(1 + (tf.get(t) ?? 0)) * Math.log(1 + all.length / d) * Math.min(t.length, 10);
    if (sc > bestScore) {
      bestScore = sc;
      best = t;
    }
  }
  if (!best) return null;
  // Speak it as it is written in the text (case of proper nouns).
  const m = new RegExp(`[\\p{L}\\p{N}'’-]*${escapeRe(best)}[\\p{L}\\p{N}'’-]*`, 'iu').exec(s.text);
  const word = m ? m[0] : best;
  // English questions need the article the text gave the noun ("Tell us about the telescope", not
  // "about telescope"); a capitalised word is a name and stays bare.
  return language === 'en' && /^\p{Ll}/u.test(word) ? `the ${word}` : word;
}
