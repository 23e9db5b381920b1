/**
 * Kokoro's Japanese front end: text -> the phoneme string Kokoro-82M v1.0 was trained on for lang_code 'j'.
 *
 * Kokoro's own pipeline (hexgrad/kokoro, KPipeline) builds misaki's JAG2P() without a version, which is misaki's first
 * generation (misaki/ja.py, adapted from cutlet): MeCab words -> their spoken kana -> phonemes through a kana table
 * with a few context rules (digraphs, っ, ん, ー), words joined by spaces. The second generation (pyopenjtalk, with
 * pitch-accent marks) is what JAG2P(version='2.0') gives; it is not what the pipeline uses, and its accent mark ` is
 * not even in the model's vocabulary (tokenizer.json model.vocab). This module follows the first generation, with
 * kuromoji (IPADIC, src/engines/tts/japanese.ts) standing in for MeCab (UniDic): both give a pronunciation field with
 * particles as spoken (は -> ワ) and long vowels as ー, which is what the kana table reads.
 *
 * Departures, all from the tagger rather than the rules: word boundaries (hence the spaces between words) are IPADIC's,
 * not UniDic's, and misaki's ja_words.txt regrouping of UniDic's short units is not applied; a compound kuromoji does
 * not know is read kanji by kanji (misaki says nothing for an unknown kanji word, which silences names); a number over
 * nine digits, which misaki's converter answers with an English error sentence, is read digit by digit.
 */
import type { JapaneseWord } from './japanese.js';

/** One consonant row: its kana (_ for a gap) and the phonemes of each, as [kana, phonemes] entries. */
function row(kana: string, phonemes: readonly string[]): Array<[string, string]> {
  return Array.from(kana).flatMap((k, i): Array<[string, string]> => (k === '_' ? [] : [[k, phonemes[i]!]]));
}

/** Kana -> phonemes, one entry per kana (hiragana; the reader's katakana is folded first). */
const KANA: Readonly<Record<string, string>> = Object.fromEntries([
  ...row('あいうえお', ['a', 'i', 'ɯ', 'e', 'o']),
  ...row('ぁぃぅぇぉ', ['a', 'i', 'ɯ', 'e', 'o']),
  ...row('かきくけこ', ['ka', 'kʲi', 'kɯ', 'ke', 'ko']),
  ...row('がぎぐげご', ['ɡa', 'ɡʲi', 'ɡɯ', 'ɡe', 'ɡo']),
  ...row('さしすせそ', ['sa', 'ɕi', 'sɨ', 'se', 'so']),
  ...row('ざじずぜぞ', ['ʣa', 'ʥi', 'zɨ', 'ʣe', 'ʣo']),
  ...row('たちつてと', ['ta', 'ʨi', 'ʦɨ', 'te', 'to']),
  ...row('だぢづでど', ['da', 'ʥi', 'zɨ', 'de', 'do']),
  ...row('なにぬねの', ['na', 'ɲi', 'nɯ', 'ne', 'no']),
  ...row('はひふへほ', ['ha', 'çi', 'ɸɯ', 'he', 'ho']),
  ...row('ばびぶべぼ', ['ba', 'bʲi', 'bɯ', 'be', 'bo']),
  ...row('ぱぴぷぺぽ', ['pa', 'pʲi', 'pɯ', 'pe', 'po']),
  ...row('まみむめも', ['ma', 'mʲi', 'mɯ', 'me', 'mo']),
  ...row('や_ゆ_よ', ['ja', '', 'jɯ', '', 'jo']),
  ...row('ゃ_ゅ_ょ', ['ja', '', 'jɯ', '', 'jo']),
  ...row('らりるれろ', ['ɾa', 'ɾʲi', 'ɾɯ', 'ɾe', 'ɾo']),
  ...row('わゐ_ゑを', ['βa', 'i', '', 'e', 'o']),
  ...row('ゎゔゕゖ', ['βa', 'vɯ', 'ka', 'ke']),
  // Katakana with no hiragana twin (ヷ ヸ ヹ ヺ) stay katakana after folding.
  ...row('ヷヸ_ヹヺ', ['va', 'vʲi', '', 've', 'vo']),
]);

/** `head` + each small kana of the list, as [pair, phonemes] entries. */
function pairs(head: string, list: ReadonlyArray<readonly [string, string]>): Array<[string, string]> {
  return list.map(([small, ps]) => [head + small, ps]);
}
/** The three ya/yu/yo combinations of a palatalized onset (yu is ɨ after a consonant, as misaki writes it). */
const yoon = (onset: string): Array<[string, string]> => [['ゃ', `${onset}a`], ['ゅ', `${onset}ɨ`], ['ょ', `${onset}o`]];

/** Kana + small kana with a reading of their own (where the generic rule in kanaPhonemes would differ or be missing). */
const PAIRS: Readonly<Record<string, string>> = Object.fromEntries([
  ...pairs('い', [['ぇ', 'je']]),
  ...pairs('う', [['ぃ', 'βi'], ['ぇ', 'βe'], ['ぉ', 'βo']]),
  ...pairs('き', [['ぇ', 'kʲe'], ...yoon('kʲ')]),
  ...pairs('ぎ', yoon('ɡʲ')),
  ...pairs('く', [['ぁ', 'kᵝa'], ['ぃ', 'kᵝi'], ['ぇ', 'kᵝe'], ['ぉ', 'kᵝo']]),
  ...pairs('ぐ', [['ぁ', 'ɡᵝa'], ['ぃ', 'ɡᵝi'], ['ぇ', 'ɡᵝe'], ['ぉ', 'ɡᵝo']]),
  ...pairs('し', [['ぇ', 'ɕe'], ...yoon('ɕ')]),
  ...pairs('じ', [['ぇ', 'ʥe'], ...yoon('ʥ')]),
  ...pairs('ち', [['ぇ', 'ʨe'], ...yoon('ʨ')]),
  ...pairs('ぢ', yoon('ʥ')),
  ...pairs('つ', [['ぁ', 'ʦa'], ['ぃ', 'ʦʲi'], ['ぇ', 'ʦe'], ['ぉ', 'ʦo']]),
  ...pairs('て', [['ぃ', 'tʲi'], ['ゅ', 'tʲɨ']]),
  ...pairs('で', [['ぃ', 'dʲi'], ['ゅ', 'dʲɨ']]),
  ...pairs('と', [['ぅ', 'tɯ']]),
  ...pairs('ど', [['ぅ', 'dɯ']]),
  ...pairs('に', [['ぇ', 'ɲe'], ...yoon('ɲ')]),
  ...pairs('ひ', [['ぇ', 'çe'], ...yoon('ç')]),
  ...pairs('び', yoon('bʲ')),
  ...pairs('ぴ', yoon('pʲ')),
  ...pairs('ふ', [['ぁ', 'ɸa'], ['ぃ', 'ɸʲi'], ['ぇ', 'ɸe'], ['ぉ', 'ɸo'], ['ゅ', 'ɸʲɨ'], ['ょ', 'ɸʲo']]),
  ...pairs('み', yoon('mʲ')),
  ...pairs('り', yoon('ɾʲ')),
  // ゔゅ and ゔょ are read with b, as misaki has them.
  ...pairs('ゔ', [['ぁ', 'va'], ['ぃ', 'vʲi'], ['ぇ', 've'], ['ぉ', 'vo'], ['ゅ', 'bʲɨ'], ['ょ', 'bʲo']]),
]);

/** Japanese punctuation -> Kokoro's (misaki's table); the combining (han)dakuten alone say nothing. */
const PUNCT: Record<string, string> = {
  '。': '.', '、': ',', '？': '?', '！': '!', '「': '“', '」': '”', '『': '“', '』': '”', '：': ':', '；': ';', '（': '(', '）': ')',
  '《': '(', '》': ')', '【': '[', '】': ']', '・': ' ', '，': ',', '～': '—', '〜': '—', '—': '—', '«': '“', '»': '”',
  '\u309A': '', '\u3099': '',
};
const TABLE: Readonly<Record<string, string>> = { ...KANA, ...PAIRS, ...PUNCT };

const SMALL = new Set(Array.from('ゃゅょぁぃぅぇぉ'));

/** Katakana (and ヴ ヵ ヶ) -> hiragana; ー and the katakana-only ヷ-ヺ are kept. */
function toHiragana(kana: string): string {
  return kana.replace(/[\u30A1-\u30F6]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0x60));
}

const VOICED: Record<string, string> = Object.fromEntries(
  Array.from('かきくけこさしすせそたちつてとはひふへほ', (k, i) => [k, 'がぎぐげござじずぜぞだぢづでどばびぶべぼ'[i]!]),
);

/** ん's sound from what follows it in the word: m, ŋ, ɲ or n by place of articulation, ɴ at the end or elsewhere. */
function moraicN(next: string | undefined): string {
  const ps = next === undefined ? undefined : TABLE[next];
  if (!ps) return 'ɴ';
  if ('mpb'.includes(ps[0]!)) return 'm';
  if ('kɡ'.includes(ps[0]!)) return 'ŋ';
  if (/^[ɲʨʥ]/u.test(ps)) return 'ɲ';
  if ('ntdɾz'.includes(ps[0]!)) return 'n';
  return 'ɴ';
}

/** One kana of a word, given its neighbours in that word (misaki's rules, in its order). */
function kanaPhonemes(prev: string | undefined, kana: string, next: string | undefined): string {
  // Iteration marks: ゝ repeats the kana before it (misaki returns the kana itself, which no vocabulary has), ゞ voices it.
  if (kana === 'ゝ' || kana === 'ヽ') return prev ?? '';
  if (kana === 'ゞ') return (prev && VOICED[prev] && TABLE[VOICED[prev]!]) || '';
  if (kana === '々' || kana === '〃') return '';
  if (prev !== undefined && TABLE[prev + kana] !== undefined) return TABLE[prev + kana]!;
  if (next !== undefined && TABLE[kana + next] !== undefined) return '';
  if (next !== undefined && SMALL.has(next)) {
    // A kana + a small one with no reading of its own: the kana's consonant, then the small kana's sound.
    if (kana === 'っ') return '';
    const head = TABLE[kana];
    return head === undefined ? '' : head.slice(0, -1) + TABLE[next]!;
  }
  if (SMALL.has(kana)) return '';
  if (kana === 'ー') return 'ː';
  if (kana === 'っ') return 'ʔ';
  if (kana === 'ん') return moraicN(next);
  return TABLE[kana] ?? '';
}

type Reading = 'kana' | 'symbol' | 'none';

/**
 * How misaki reads a word: MeCab's known words and unknown kana words through the kana table, unknown symbols
 * through the punctuation table (keeping what it lacks), any other unknown word (kanji, Greek ...) not at all.
 */
function readingOf(word: JapaneseWord): Reading {
  if (word.known) return 'kana';
  const first = word.surface.codePointAt(0) ?? 0;
  if ((first >= 0x3041 && first <= 0x309f) || (first >= 0x30a0 && first <= 0x30ff)) return 'kana';
  return /^[\p{L}\p{N}]/u.test(word.surface) ? 'none' : 'symbol';
}

function wordPhonemes(word: JapaneseWord): string {
  // ASCII (Latin words, ASCII punctuation) passes through as written; the vocabulary keeps what it knows.
  if (Array.from(word.surface).every((c) => c.charCodeAt(0) < 0x80)) return word.surface;
  const reading = readingOf(word);
  if (reading === 'symbol') return Array.from(word.surface, (c) => TABLE[c] ?? c).join('');
  if (reading === 'none') return '';
  const kana = Array.from(toHiragana(word.spoken ?? word.surface));
  return kana.map((k, i) => kanaPhonemes(kana[i - 1], k, kana[i + 1])).join('');
}

/**
 * Words -> Kokoro's phoneme string: each word's phonemes followed by a space, except that opening brackets and quotes
 * bind to what follows, closing ones and . , ? ! : to what precedes, and ・ (a space itself) adds none; then a glottal
 * stop (っ) joins its neighbours, as misaki writes 行っ た as "iʔta".
 */
export function kokoroJapanesePhonemes(words: readonly JapaneseWord[]): string {
  const out: Array<{ text: string; space: boolean }> = [];
  for (const word of words) {
    const text = wordPhonemes(word);
    const prev = out[out.length - 1];
    const token = { text, space: true };
    // Substring tests as misaki's `in` does: an empty reading counts as an opening bracket.
    if ('「『«'.includes(word.surface) || '(['.includes(text)) {
      if (prev) prev.space = true;
      token.space = false;
    } else if ('」』»'.includes(word.surface) || ']).,?!:'.includes(text)) {
      if (prev) prev.space = false;
    } else if (text === ' ') {
      token.space = false;
    }
    out.push(token);
  }
  const joined = out.map((t) => t.text.replaceAll('っ', '') + (t.space ? ' ' : '')).join('');
  return joined
    .trim()
    .replace(/\s+/gu, ' ')
    .replaceAll('(', '«')
    .replaceAll(')', '»')
    .replace(/(?<![!",.:;?»—…”]) (?=ʔ)|(?<=ʔ) (?!["«“])/gu, '');
}

const DIGIT = ['ゼロ', 'いち', 'に', 'さん', 'よん', 'ご', 'ろく', 'なな', 'はち', 'きゅう'];
/** Hundreds and thousands whose reading changes (sound changes); 1000 inside a larger number is いっせん. */
const HUNDREDS: Record<string, string> = { '1': 'ひゃく', '3': 'さんびゃく', '6': 'ろっぴゃく', '8': 'はっぴゃく' };
const THOUSANDS: Record<string, string> = { '3': 'さんぜん', '8': 'はっせん' };

function tens(d: string): string {
  if (d[0] === '0') return DIGIT[Number(d[1])]!;
  const ten = d[0] === '1' ? 'じゅう' : `${DIGIT[Number(d[0])]}じゅう`;
  return d[1] === '0' ? ten : ten + DIGIT[Number(d[1])]!;
}

function hundreds(d: string): string {
  const head = HUNDREDS[d[0]!] ?? `${DIGIT[Number(d[0])]}ひゃく`;
  if (d.slice(1) === '00') return head;
  return head + (d[1] === '0' ? DIGIT[Number(d[2])]! : tens(d.slice(1)));
}

/** Up to four digits; `alone` is a number of its own (1000 = せん) rather than a group of a larger one (いっせん). */
function thousands(d: string, alone: boolean): string {
  const s = d.replace(/^0+/, '');
  if (s.length === 0) return '';
  if (s.length === 1) return DIGIT[Number(s)]!;
  if (s.length === 2) return tens(s);
  if (s.length === 3) return hundreds(s);
  const head = s[0] === '1' ? (alone ? 'せん' : 'いっせん') : (THOUSANDS[s[0]!] ?? `${DIGIT[Number(s[0])]}せん`);
  if (s.slice(1) === '000') return head;
  return head + (s[1] === '0' ? tens(s.slice(2)) : hundreds(s.slice(1)));
}

/**
 * A run of ASCII digits in hiragana, as misaki's num2kana.Convert reads it (up to nine digits: 万 and 億 groups,
 * its quirks kept, e.g. 100 and 10 without いち, 1000 alone as せん but いっせん in a group, 0 as ゼロ).
 */
export function japaneseNumber(digits: string): string {
  // misaki refuses more than nine characters before it drops leading zeros; here they are read digit by digit.
  if (digits.length > 9) return Array.from(digits, (d) => DIGIT[Number(d)]!).join('');
  const s = digits.replace(/^0+(?=\d)/, '');
  if (s.length <= 4) return s.length === 1 ? DIGIT[Number(s)]! : s.length === 2 ? tens(s) : s.length === 3 ? hundreds(s) : thousands(s, true);
  const high = s.slice(0, -4);
  let out: string;
  if (high.length === 5) {
    out = `${DIGIT[Number(high[0])]}おく${thousands(high.slice(1), false)}${high.slice(1) === '0000' ? '' : 'まん'}`;
  } else {
    const group = high.length === 1 ? DIGIT[Number(high)]! : high.length === 2 ? tens(high) : high.length === 3 ? hundreds(high) : thousands(high, false);
    out = `${group}まん`;
  }
  return out + thousands(s.slice(-4), false);
}

/** Small katakana of the phonetic extensions block -> the ordinary katakana (misaki maps them before NFKC). */
const KATAKANA_EXTENSIONS = Object.fromEntries(Array.from('ㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿ', (c, i) => [c, 'クシストヌハヒフヘホムラリルレロ'[i]!]));

/**
 * misaki's normalization: a wave dash before a number is "から" (a range), NFKC (full-width Latin and digits to
 * ASCII, half-width katakana to full width), and every run of digits becomes its reading after a space.
 */
export function normalizeJapanese(text: string): string {
  const s = text
    .replace(/[〜～](?=\p{Nd})/gu, 'から')
    .replace(/[\u31F0-\u31FF]/g, (c) => KATAKANA_EXTENSIONS[c] ?? c)
    .normalize('NFKC');
  return s.replace(/[0-9]+/g, (d) => ` ${japaneseNumber(d)}`);
}

/** Text -> Kokoro's Japanese phonemes, with `words` as the tagger (kuromoji through JapaneseReader.words). */
export async function japaneseToKokoro(text: string, words: (text: string) => Promise<JapaneseWord[]>): Promise<string> {
  return kokoroJapanesePhonemes(await words(normalizeJapanese(text)));
}
