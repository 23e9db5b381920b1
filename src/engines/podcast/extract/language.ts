/** Language detection mapped onto the spec's podcast language keys. */
import { detectAll } from 'tinyld';
import { PODCAST_LANGUAGES } from '../../../domain/vocabulary.js';

const SUPPORTED = new Set<string>(PODCAST_LANGUAGES);

// Characters written in Cantonese but (almost) never in Standard Written Chinese.
const CANTONESE = /[嘅係咗唔哋佢冇喺嚟睇咁啲乜嘢囉噉㗎咩嗰畀攞]/gu;
const HAN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]/gu;
const KANA = /[\u3040-\u30ff]/gu;
const HANGUL = /[\uac00-\ud7af\u1100-\u11ff]/gu;
const ARABIC = /[\u0600-\u06ff]/gu;
const CYRILLIC = /[\u0400-\u04ff]/gu;
const LATIN = /[A-Za-z\u00c0-\u024f]/gu;

const count = (s: string, re: RegExp) => (s.match(re) ?? []).length;

/** Maps an HTML lang / BCP 47 tag (e.g. "pt-BR", "zh-HK", "yue") to a spec key, or null. */
export function languageFromTag(tag: string | null | undefined): string | null {
  if (!tag) return null;
  const t = tag.trim().toLowerCase().replace(/_/g, '-');
  if (t === 'yue' || t.startsWith('yue-') || t === 'zh-yue' || t === 'zh-hk' || t === 'zh-mo') return 'zh_yue';
  const base = t.split('-')[0]!;
  return SUPPORTED.has(base) ? base : null;
}

/**
 * Script counts decide CJK, Arabic and Cyrillic text on their own (reliable even for short text);
 * tinyld separates the Latin-script languages. Anything outside the spec's list yields null.
 */
export function detectLanguage(text: string): string | null {
  const sample = text.length > 20_000 ? text.slice(0, 20_000) : text;
  const han = count(sample, HAN);
  const kana = count(sample, KANA);
  const hangul = count(sample, HANGUL);
  const arabic = count(sample, ARABIC);
  const cyr = count(sample, CYRILLIC);
  const latin = count(sample, LATIN);
  // One CJK character carries about what three Latin letters do: weighted so that a Japanese manual full
  // of command names and URLs still reads as Japanese.
  const cjk = 3 * (han + kana + hangul);
  const total = cjk + arabic + cyr + latin;
  if (total < 3) return null;
  if (3 * hangul > 0.3 * total) return 'ko';
  if (kana > 0.05 * (han + kana) && 3 * (kana + han) > 0.3 * total) return 'ja';
  if (3 * han > 0.3 * total) {
    const yue = count(sample, CANTONESE);
    return yue >= Math.max(2, han * 0.01) ? 'zh_yue' : 'zh';
  }
  // Arabic and Cyrillic script: the spec has one language each, and an n-gram model misled by an English
  // licence paragraph must not turn a Russian document into an English episode.
  if (arabic > 0.3 * total) return 'ar';
  if (cyr > 0.3 * total) return 'ru';
  return detectFromModel(sample, ['en', 'es', 'fr', 'pt', 'de']);
}

function detectFromModel(sample: string, allowed: string[]): string | null {
  // Prose paragraphs only: infobox and table fragments (names, numbers) mislead n-gram models.
  const prose = sample.split(/\n+/).filter((p) => p.split(/\s+/).length >= 12).join('\n');
  const ranked = detectAll((prose.length >= 200 ? prose : sample).slice(0, 5000));
  const best = ranked[0];
  if (!best) return allowed.length === 1 ? allowed[0]! : null;
  return allowed.includes(best.lang) ? best.lang : null;
}
