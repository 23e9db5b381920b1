import { describe, expect, it } from 'vitest';
import { measureSize } from '../../../src/engines/podcast/script.js';
import { inLanguageOf } from '../../../src/engines/podcast/sentence-language.js';
import { rankSentences } from '../../../src/engines/podcast/textrank.js';
import { wordsOf } from '../../../src/engines/podcast/words.js';

/** The regex definition measureSize had (and must still agree with), kept here as the reference. */
function regexSize(text: string, language: string): number {
  const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]/gu;
  const WORD = /[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu;
  if (!['zh', 'zh_yue', 'ja', 'ko'].includes(language)) return (text.match(WORD) ?? []).length;
  return (text.match(CJK) ?? []).length + (text.replace(CJK, ' ').match(WORD) ?? []).length;
}

let seed = 12345;
const rand = (n: number) => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
};
const randomText = (alphabet: string[], maxLen: number) => {
  let text = '';
  const len = rand(maxLen);
  for (let i = 0; i < len; i++) text += alphabet[rand(alphabet.length)];
  return text;
};

/** inLanguageOf as it was written with global regexes (the reference for the counting version). */
function regexInLanguageOf(sentence: string, language: string): boolean {
  const SCRIPT: Record<string, RegExp> = { zh: /[\u3400-\u4dbf\u4e00-\u9fff]/gu, ja: /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]/gu, ru: /[\u0400-\u04ff]/gu };
  const FW: Record<string, Set<string>> = {
    en: new Set('the and is are was were of to which that with for this these can be from by not it its have has will'.split(' ')),
    es: new Set('el los las que y es son un una para con por del se su sus como pero más también está'.split(' ')),
    fr: new Set('le les des du et est sont un une que pour dans sur avec qui au aux ce cette pas ne il elle'.split(' ')),
    pt: new Set('o os as que e um uma para com não do da dos das no na nos nas se é são pelo pela'.split(' ')),
    de: new Set('der die das und ist sind ein eine nicht mit für von zu auf den dem des im sich auch wird'.split(' ')),
  };
  const letters = (sentence.match(/\p{L}/gu) ?? []).length;
  if (!letters) return false;
  const script = SCRIPT[language];
  if (script) return (sentence.match(script) ?? []).length >= letters * (language === 'ru' ? 0.5 : 0.2);
  if ((sentence.match(/[A-Za-z\u00c0-\u024f]/gu) ?? []).length < letters * 0.6) return false;
  const own = FW[language]!;
  const words = sentence.toLowerCase().match(/[\p{L}]+/gu) ?? [];
  const score = (set: Set<string>) => words.filter((w) => set.has(w)).length;
  let other = 0;
  for (const [lang, set] of Object.entries(FW)) if (lang !== language) other = Math.max(other, score(set));
  return score(own) >= other || other < 2;
}

describe('word scanning without regex backtracking', () => {
  it('wordsOf finds the words the regex definition found', () => {
    const alphabet = ['a', 'B', 'é', '7', ' ', "'", '’', '-', '.', '日', 'Ж', '😀', '\n'];
    for (let round = 0; round < 2000; round++) {
      const text = randomText(alphabet, 30);
      expect(wordsOf(text), JSON.stringify(text)).toEqual(text.match(/[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu) ?? []);
    }
  });

  it('inLanguageOf decides as the regex version did', () => {
    const alphabet = ['the ', 'and ', 'der ', 'die ', 'und ', 'le ', 'et ', 'que ', 'los ', 'o ', 'word ', 'Wörter ', '日本', 'かな', 'Слово ', '7 ', ', ', '. ', '× '];
    for (let round = 0; round < 3000; round++) {
      const text = randomText(alphabet, 14);
      for (const language of ['en', 'de', 'fr', 'es', 'pt', 'ja', 'zh', 'ru']) {
        expect(inLanguageOf(text, language), `${language} ${JSON.stringify(text)}`).toBe(regexInLanguageOf(text, language));
      }
    }
  });

  it('ranks and judges a 5 MB one-word text without overflowing the stack', () => {
    const word = `’${'a'.repeat(5 * 1024 * 1024)}`;
    expect(wordsOf(word)).toHaveLength(1);
    expect(inLanguageOf(word, 'en')).toBe(true);
    expect(rankSentences(word)).toHaveLength(1);
  });
});

describe('measureSize', () => {
  it('counts words and CJK characters as the regex definition did, on random text', () => {
    const alphabet = ['a', 'B', 'é', '7', ' ', ' ', "'", '’', '-', '--', '.', ',', '日', '本', 'か', '한', 'Ж', '😀', '\n', '٣'];
    for (let round = 0; round < 2000; round++) {
      const text = randomText(alphabet, 40);
      for (const language of ['en', 'ja']) expect(measureSize(text, language), `${language} ${JSON.stringify(text)}`).toBe(regexSize(text, language));
    }
    expect(measureSize("Don't stop the well-known rock--and roll", 'en')).toBe(7);
    expect(measureSize('東京はTokyo Towerで有名', 'ja')).toBe(8);
  });

  it('counts a 5 MB one-word text (two-byte string) without overflowing the stack', () => {
    // The attack: one "word" of millions of letters. V8's backtracking for /[\p{L}\p{N}]+/gu ran out of stack here.
    const word = `’${'a'.repeat(5 * 1024 * 1024)}`;
    expect(measureSize(word, 'en')).toBe(1);
    expect(measureSize(word, 'zh')).toBe(1);
  });
});
