/**
 * Whether one sentence is in the episode's language. Sentence-sized text is too short for n-gram
 * detection, so scripts decide the non-Latin languages and function words the Latin ones: a French
 * manual's untranslated English paragraph has English function words and no French ones.
 */

const SCRIPT: Record<string, RegExp> = {
  zh: /[\u3400-\u4dbf\u4e00-\u9fff]/u,
  zh_yue: /[\u3400-\u4dbf\u4e00-\u9fff]/u,
  ja: /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]/u,
  ko: /[\uac00-\ud7af]/u,
  ar: /[\u0600-\u06ff]/u,
  ru: /[\u0400-\u04ff]/u,
};

const FUNCTION_WORDS: Record<string, Set<string>> = {
  en: new Set('the and is are was were of to which that with for this these can be from by not it its have has will'.split(' ')),
  es: new Set('el los las que y es son un una para con por del se su sus como pero más también está'.split(' ')),
  fr: new Set('le les des du et est sont un une que pour dans sur avec qui au aux ce cette pas ne il elle'.split(' ')),
  pt: new Set('o os as que e um uma para com não do da dos das no na nos nas se é são pelo pela'.split(' ')),
  de: new Set('der die das und ist sind ein eine nicht mit für von zu auf den dem des im sich auch wird'.split(' ')),
};

const LETTER = /\p{L}/u;
const LATIN = /[A-Za-z\u00c0-\u024f]/u;

/**
 * One pass over the code points, counting (no global regex: `match(/[\p{L}]+/gu)` on one word of millions
 * of letters overflowed V8's backtracking stack, and single-letter matches made millions of strings).
 */
export function inLanguageOf(sentence: string, language: string): boolean {
  const script = SCRIPT[language];
  const own = FUNCTION_WORDS[language];
  let letters = 0;
  let inScript = 0;
  let latin = 0;
  const words: string[] = [];
  let word = '';
  for (const ch of sentence) {
    if (script?.test(ch)) inScript++;
    if (LATIN.test(ch)) latin++;
    if (LETTER.test(ch)) {
      letters++;
      // Only function words are looked up, and none is longer than a few letters: no need to build long ones.
      if (own && !script && word.length <= 16) word += ch;
    } else if (word) {
      words.push(word.toLowerCase());
      word = '';
    }
  }
  if (word) words.push(word.toLowerCase());
  if (!letters) return false;
  // Command names and Latin product names are normal inside CJK, Arabic or Russian prose.
  if (script) return inScript >= letters * (language === 'ru' || language === 'ar' ? 0.5 : 0.2);
  // Latin-script languages: first not another script, then more of our function words than any other's.
  if (latin < letters * 0.6) return false;
  if (!own) return true;
  const score = (set: Set<string>) => words.filter((w) => set.has(w)).length;
  const mine = score(own);
  let other = 0;
  for (const [lang, set] of Object.entries(FUNCTION_WORDS)) if (lang !== language) other = Math.max(other, score(set));
  return mine >= other || other < 2;
}
