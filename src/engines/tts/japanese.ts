import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import kuromoji from 'kuromoji';
import type { IpadicFeatures, Tokenizer } from 'kuromoji';

/** Kanji (and the iteration mark) that espeak's ja voice cannot read: it says "Chinese letter" for each. */
const KANJI = /[\u3005\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\u{20000}-\u{2FA1F}]/u;

/** Katakana -> hiragana (same layout, 0x60 apart); the prolonged sound mark ー is kept, espeak reads it. */
export function katakanaToHiragana(text: string): string {
  return text.replace(/[\u30A1-\u30F6]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0x60));
}

/** A word as kuromoji segments it: as written, as spoken (katakana; null when unknown), and whether IPADIC knows it. */
export interface JapaneseWord {
  surface: string;
  spoken: string | null;
  known: boolean;
}

/**
 * Turns Japanese text into kana readings for espeak with kuromoji (IPADIC). The *pronunciation*
 * field is used, not the reading: it has particles as spoken (は -> ワ, へ -> エ) and long vowels as
 * ー (東京 -> トーキョー), which espeak renders correctly, whereas it reads とうきょう letter by letter.
 * Punctuation, Latin text and digits pass through, so sentence splitting and espeak's own number
 * reading still work. One tokenizer per instance, built on first use (the dictionary takes ~1 s).
 */
export class JapaneseReader {
  private tokenizer: Promise<Tokenizer<IpadicFeatures>> | null = null;

  private load(): Promise<Tokenizer<IpadicFeatures>> {
    if (!this.tokenizer) {
      const require = createRequire(import.meta.url);
      const dicPath = join(dirname(require.resolve('kuromoji/package.json')), 'dict');
      this.tokenizer = new Promise((resolve, reject) => {
        kuromoji.builder({ dicPath }).build((err, tokenizer) => (err ? reject(err) : resolve(tokenizer)));
      });
      this.tokenizer.catch(() => {
        this.tokenizer = null;
      });
    }
    return this.tokenizer;
  }

  /** Hiragana reading of `text`, keeping everything kuromoji has no reading for. */
  async toKana(text: string): Promise<string> {
    if (!/[\u3040-\u30FF\u3400-\u9FFF\uF900-\uFAFF]/u.test(text)) return text;
    const tokenizer = await this.load();
    let out = '';
    for (const token of tokenizer.tokenize(text)) {
      const surface = token.surface_form;
      const spoken = spokenForm(token);
      if (!spoken && KANJI.test(surface)) {
        // An unknown compound (names, rare words): read it kanji by kanji rather than let espeak say
        // "Chinese letter"; a kanji without any reading is dropped, silence being the lesser evil.
        for (const ch of surface) {
          const single = tokenizer.tokenize(ch)[0];
          const reading = single ? spokenForm(single) : null;
          out += reading ? katakanaToHiragana(reading) : KANJI.test(ch) ? '' : ch;
        }
      } else if (!spoken || !/[\u3040-\u30FF]/u.test(surface + spoken)) {
        out += surface; // punctuation, Latin, digits, symbols
      } else if (/^[\u30A0-\u30FF]+$/u.test(surface)) {
        out += surface; // already katakana (loanwords): keep as written
      } else {
        out += katakanaToHiragana(spoken);
      }
    }
    return out;
  }

  /**
   * The words of `text` with their spoken forms, for front ends that read kana themselves (Kokoro, kokoro-ja.ts).
   * White space is no word (MeCab, which those front ends were written for, yields none). A compound IPADIC does not
   * know is split into its kanji, each with its own reading where it has one, rather than left unread.
   */
  async words(text: string): Promise<JapaneseWord[]> {
    const tokenizer = await this.load();
    const out: JapaneseWord[] = [];
    for (const token of tokenizer.tokenize(text)) {
      const surface = token.surface_form;
      if (!surface.trim()) continue;
      const known = token.word_type === 'KNOWN';
      if (known || !KANJI.test(surface)) {
        out.push({ surface, spoken: spokenForm(token), known });
        continue;
      }
      for (const ch of surface) {
        const single = tokenizer.tokenize(ch)[0];
        const spoken = single?.word_type === 'KNOWN' ? spokenForm(single) : null;
        out.push({ surface: ch, spoken, known: spoken !== null });
      }
    }
    return out;
  }

  /** True when the text still contains characters espeak cannot read as Japanese. */
  static hasKanji(text: string): boolean {
    return KANJI.test(text);
  }
}

function spokenForm(token: IpadicFeatures): string | null {
  for (const v of [token.pronunciation, token.reading]) if (v && v !== '*') return v;
  return null;
}
