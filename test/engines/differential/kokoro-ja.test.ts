/**
 * Differential test of Kokoro's Japanese front end against misaki's, ported here independently: hexgrad/misaki's
 * first-generation JAG2P (misaki/ja.py, the cutlet-based one that kokoro's KPipeline builds for lang_code 'j'), with
 * its num2kana.Convert, written as the Python reads (tables by code point, `in` as substring tests, the same order of
 * rules), then kokoro-onnx and kokoro-js for tokens, chunks and model inputs (reference-kokoro-onnx.ts).
 *
 * MeCab with UniDic cannot run here, so both sides take their words from the same tagger, kuromoji (IPADIC), the way
 * the English test feeds both sides the same espeak IPA: the reference reads each token as fugashi's Word would be
 * built (pron, else reading, else surface, in hiragana; MeCab's char type for unknown words) and skips white space,
 * which MeCab never makes a word. Not ported: misaki's ja_words.txt regrouping (a data file), absent on both sides;
 * mojimoji's width conversions, which NFKC has already done for these sentences. The sentences avoid kanji IPADIC
 * does not know, where Soundry reads kanji by kanji and misaki says nothing (a departure, tested on its own below).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import kuromoji from 'kuromoji';
import type { IpadicFeatures, Tokenizer } from 'kuromoji';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KokoroEngine } from '../../../src/engines/tts/kokoro.js';
import { japaneseNumber, japaneseToKokoro, kokoroJapanesePhonemes } from '../../../src/engines/tts/kokoro-ja.js';
import { JapaneseReader } from '../../../src/engines/tts/japanese.js';
import type { EngineVoice } from '../../../src/ports/engines.js';
import { installKokoroStandIns, kokoroStandIns, kokoroVoiceOf, voiceTable, type KokoroStandIns } from '../../fixtures/kokoro-fixture.js';
import { refFilter, refSpeak, refSplit } from './reference-kokoro-onnx.js';

// ---- The reference, ported (Python semantics kept; no Soundry code below this line until the tests) ----

/** HEPBURN for U+3041 (ぁ) .. U+3096 (ゖ) in code point order; null for っ and ん, which have rules of their own. */
const HEPBURN_RUN: Array<string | null> = [
  'a', 'a', 'i', 'i', 'ɯ', 'ɯ', 'e', 'e', 'o', 'o',
  'ka', 'ɡa', 'kʲi', 'ɡʲi', 'kɯ', 'ɡɯ', 'ke', 'ɡe', 'ko', 'ɡo',
  'sa', 'ʣa', 'ɕi', 'ʥi', 'sɨ', 'zɨ', 'se', 'ʣe', 'so', 'ʣo',
  'ta', 'da', 'ʨi', 'ʥi', null, 'ʦɨ', 'zɨ', 'te', 'de', 'to', 'do',
  'na', 'ɲi', 'nɯ', 'ne', 'no',
  'ha', 'ba', 'pa', 'çi', 'bʲi', 'pʲi', 'ɸɯ', 'bɯ', 'pɯ', 'he', 'be', 'pe', 'ho', 'bo', 'po',
  'ma', 'mʲi', 'mɯ', 'me', 'mo',
  'ja', 'ja', 'jɯ', 'jɯ', 'jo', 'jo',
  'ɾa', 'ɾʲi', 'ɾɯ', 'ɾe', 'ɾo',
  'βa', 'βa', 'i', 'e', 'o', null, 'vɯ', 'ka', 'ke',
];
const DIGRAPHS = `いぇ:je うぃ:βi うぇ:βe うぉ:βo きぇ:kʲe きゃ:kʲa きゅ:kʲɨ きょ:kʲo ぎゃ:ɡʲa ぎゅ:ɡʲɨ ぎょ:ɡʲo
  くぁ:kᵝa くぃ:kᵝi くぇ:kᵝe くぉ:kᵝo ぐぁ:ɡᵝa ぐぃ:ɡᵝi ぐぇ:ɡᵝe ぐぉ:ɡᵝo しぇ:ɕe しゃ:ɕa しゅ:ɕɨ しょ:ɕo
  じぇ:ʥe じゃ:ʥa じゅ:ʥɨ じょ:ʥo ちぇ:ʨe ちゃ:ʨa ちゅ:ʨɨ ちょ:ʨo ぢゃ:ʥa ぢゅ:ʥɨ ぢょ:ʥo
  つぁ:ʦa つぃ:ʦʲi つぇ:ʦe つぉ:ʦo てぃ:tʲi てゅ:tʲɨ でぃ:dʲi でゅ:dʲɨ とぅ:tɯ どぅ:dɯ
  にぇ:ɲe にゃ:ɲa にゅ:ɲɨ にょ:ɲo ひぇ:çe ひゃ:ça ひゅ:çɨ ひょ:ço びゃ:bʲa びゅ:bʲɨ びょ:bʲo ぴゃ:pʲa ぴゅ:pʲɨ ぴょ:pʲo
  ふぁ:ɸa ふぃ:ɸʲi ふぇ:ɸe ふぉ:ɸo ふゅ:ɸʲɨ ふょ:ɸʲo みゃ:mʲa みゅ:mʲɨ みょ:mʲo りゃ:ɾʲa りゅ:ɾʲɨ りょ:ɾʲo
  ゔぁ:va ゔぃ:vʲi ゔぇ:ve ゔぉ:vo ゔゅ:bʲɨ ゔょ:bʲo`;
const SYMBOLS: Array<[string, string]> = [
  ['。', '.'], ['、', ','], ['？', '?'], ['！', '!'], ['「', '\u201C'], ['」', '\u201D'], ['『', '\u201C'], ['』', '\u201D'], ['：', ':'],
  ['；', ';'], ['（', '('], ['）', ')'], ['《', '('], ['》', ')'], ['【', '['], ['】', ']'], ['・', ' '], ['，', ','], ['～', '—'],
  ['〜', '—'], ['—', '—'], ['«', '\u201C'], ['»', '\u201D'], ['\u309A', ''], ['\u3099', ''],
];

function buildTable(): Map<string, string> {
  const table = new Map<string, string>();
  HEPBURN_RUN.forEach((ps, i) => ps !== null && table.set(String.fromCodePoint(12353 + i), ps));
  ['va', 'vʲi', 've', 'vo'].forEach((ps, i) => table.set(String.fromCodePoint(12535 + i), ps));
  for (const pair of DIGRAPHS.split(/\s+/)) {
    const [k, v] = pair.split(':');
    table.set(k!, v!);
  }
  for (const [k, v] of SYMBOLS) table.set(k, v);
  return table;
}
const TABLE = buildTable();
const SUTEGANA = 'ゃゅょぁぃぅぇぉ';
const ODORI = '〃々ゝゞヽ';

function addDakuten(kk: string): string | null {
  const i = 'かきくけこさしすせそたちつてとはひふへほ'.indexOf(kk);
  return i < 0 ? null : 'がぎぐげござじずぜぞだぢづでどばびぶべぼ'[i]!;
}

/** JAG2P._get_single_mapping. */
function singleMapping(pk: string | null, kk: string, nk: string | null): string {
  if (ODORI.includes(kk)) {
    if ('ゝヽ'.includes(kk)) return pk ?? '';
    if ('ゞヾ'.includes(kk)) {
      if (!pk) return '';
      const vv = addDakuten(pk);
      return vv ? TABLE.get(vv)! : '';
    }
    return '';
  }
  if (pk && TABLE.has(pk + kk)) return TABLE.get(pk + kk)!;
  if (nk && TABLE.has(kk + nk)) return '';
  if (nk && SUTEGANA.includes(nk)) {
    if (kk === 'っ') return '';
    return TABLE.get(kk)!.slice(0, -1) + TABLE.get(nk)!;
  }
  if (SUTEGANA.includes(kk)) return '';
  if (kk === 'ー') return 'ː';
  if (kk === 'っ') return 'ʔ';
  if (kk === 'ん') {
    const tnk = nk === null ? undefined : TABLE.get(nk);
    if (tnk) {
      if ('mpb'.includes(tnk[0]!)) return 'm';
      if ('kɡ'.includes(tnk[0]!)) return 'ŋ';
      if (['ɲ', 'ʨ', 'ʥ'].some((p) => tnk.startsWith(p))) return 'ɲ';
      if ('ntdɾz'.includes(tnk[0]!)) return 'n';
    }
    return 'ɴ';
  }
  return TABLE.get(kk) ?? '';
}

interface Word { surface: string; hira: string; charType: number }

/** JAG2P._romaji_word. */
function romajiWord(word: Word): string {
  if (Array.from(word.surface).every((c) => c.codePointAt(0)! <= 0x7f)) return word.surface; // str.isascii()
  if (word.charType === 3) return Array.from(word.surface, (c) => TABLE.get(c) ?? c).join('');
  if (word.charType !== 6) return '';
  const hira = Array.from(word.hira);
  let out = '';
  hira.forEach((ch, ki) => {
    out += singleMapping(ki > 0 ? hira[ki - 1]! : null, ch, ki < hira.length - 1 ? hira[ki + 1]! : null);
  });
  return out;
}

/** JAG2P._romaji_tokens (without the ja_words.txt grouping) and the joining in __call__. */
function romajiTokens(words: Word[]): string {
  const out: Array<{ surface: string; space: boolean }> = [];
  for (const word of words) {
    const po = out.length > 0 ? out[out.length - 1]! : null;
    const roma = romajiWord(word);
    const tok = { surface: roma, space: false };
    if ('「『«'.includes(word.surface) || '(['.includes(roma)) {
      if (po) po.space = true;
    } else if ('」』»'.includes(word.surface) || ']).,?!:'.includes(roma)) {
      if (po) po.space = false;
      tok.space = true;
    } else if (roma === ' ') {
      tok.space = false;
    } else {
      tok.space = true;
    }
    out.push(tok);
  }
  for (const tok of out) tok.surface = tok.surface.replaceAll('っ', '');
  const joined = out.map((t) => `${t.surface}${t.space ? ' ' : ''}`).join('');
  const ps = joined.trim().replace(/\s+/gu, ' ').replaceAll('(', '«').replaceAll(')', '»');
  return ps.replace(/(?<![!",.:;?»—…”]) (?=ʔ)|(?<=ʔ) (?!["«“])/gu, '');
}

// num2kana.Convert (hiragana): the number's parts joined by spaces, the spaces removed at the end.
const H: Record<string, string> = {
  '0': 'ゼロ', '1': 'いち', '2': 'に', '3': 'さん', '4': 'よん', '5': 'ご', '6': 'ろく', '7': 'なな', '8': 'はち', '9': 'きゅう',
  '10': 'じゅう', '100': 'ひゃく', '1000': 'せん', '10000': 'まん', '100000000': 'おく', '300': 'さんびゃく', '600': 'ろっぴゃく',
  '800': 'はっぴゃく', '3000': 'さんぜん', '8000': 'はっせん', '01000': 'いっせん',
};
const lenOne = (n: string) => H[n]!;
function lenTwo(n: string): string {
  if (n[0] === '0') return lenOne(n[1]!);
  if (n === '10') return H['10']!;
  if (n[0] === '1') return `${H['10']} ${lenOne(n[1]!)}`;
  if (n[1] === '0') return `${lenOne(n[0]!)} ${H['10']}`;
  return [H[n[0]!], H['10'], H[n[1]!]].join(' ');
}
function lenThree(n: string): string {
  const parts = n[0] === '1' || n[0] === '3' || n[0] === '6' || n[0] === '8' ? [H[`${n[0]}00`]!] : [H[n[0]!]!, H['100']!];
  if (!(n.slice(1) === '00' && n.length === 3)) parts.push(n[1] === '0' ? H[n[2]!]! : lenTwo(n.slice(1)));
  return parts.join(' ');
}
function lenFour(num: string, standAlone: boolean): string {
  if (num === '0000') return '';
  let n = num;
  while (n[0] === '0') n = n.slice(1);
  if (n.length === 1) return lenOne(n);
  if (n.length === 2) return lenTwo(n);
  if (n.length === 3) return lenThree(n);
  const parts: string[] = [];
  if (n[0] === '1' && standAlone) parts.push(H['1000']!);
  else if (n[0] === '1') parts.push(H['01000']!);
  else if (n[0] === '3') parts.push(H['3000']!);
  else if (n[0] === '8') parts.push(H['8000']!);
  else parts.push(H[n[0]!]!, H['1000']!);
  if (!(n.slice(1) === '000' && n.length === 4)) parts.push(n[1] === '0' ? lenTwo(n.slice(2)) : lenThree(n.slice(1)));
  return parts.join(' ');
}
function lenX(n: string): string {
  const head = n.slice(0, -4);
  const parts: string[] = [];
  if (head.length === 1) parts.push(H[head]!, H['10000']!);
  else if (head.length === 2) parts.push(lenTwo(n.slice(0, 2)), H['10000']!);
  else if (head.length === 3) parts.push(lenThree(n.slice(0, 3)), H['10000']!);
  else if (head.length === 4) parts.push(lenFour(n.slice(0, 4), false), H['10000']!);
  else {
    parts.push(H[n[0]!]!, H['100000000']!, lenFour(n.slice(1, 5), false));
    if (n.slice(1, 5) !== '0000') parts.push(H['10000']!);
  }
  parts.push(lenFour(n.slice(-4), false));
  return parts.join(' ');
}
function convert(num: string): string {
  let n = num;
  while (n[0] === '0' && n.length > 1) n = n.slice(1);
  const r = n.length === 1 ? lenOne(n) : n.length === 2 ? lenTwo(n) : n.length === 3 ? lenThree(n) : n.length === 4 ? lenFour(n, true) : lenX(n);
  return r.replaceAll(' ', '');
}

/** JAG2P._normalize_text (mojimoji's conversions are NFKC's for these sentences). */
function normalize(text: string): string {
  const ext: Record<string, string> = { ㇰ: 'ク', ㇱ: 'シ', ㇲ: 'ス', ㇳ: 'ト', ㇴ: 'ヌ', ㇵ: 'ハ', ㇶ: 'ヒ', ㇷ: 'フ', ㇸ: 'ヘ', ㇹ: 'ホ', ㇺ: 'ム', ㇻ: 'ラ', ㇼ: 'リ', ㇽ: 'ル', ㇾ: 'レ', ㇿ: 'ロ' };
  let t = text.replace(/[〜～](?=\p{Nd})/gu, 'から');
  for (const [k, v] of Object.entries(ext)) t = t.replaceAll(k, v);
  t = t.normalize('NFKC');
  return (t.match(/\d+|\D+/g) ?? []).map((part) => (/^\d+$/.test(part) ? ` ${convert(part)}` : part)).join('');
}

/** MeCab's character class of an unknown word's first character (char.def): KANJI 2, SYMBOL 3, NUMERIC 4, ALPHA 5 ... */
function charType(ch: string): number {
  const c = ch.codePointAt(0)!;
  if (c >= 0x3041 && c <= 0x309f) return 6;
  if (c >= 0x30a1 && c <= 0x30ff) return 7;
  if ((c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf)) return 2;
  if (/\p{N}/u.test(ch)) return 4;
  if (/\p{L}/u.test(ch)) return 5;
  return 3;
}

const kata2hira = (s: string) => s.replace(/[\u30A1-\u30F6]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0x60));

/** JAG2P.__call__ with kuromoji as the tagger: Word(surface, kata2hira(pron or kana or surface), char type). */
function referencePhonemes(tagger: Tokenizer<IpadicFeatures>, text: string): string {
  const words: Word[] = [];
  for (const t of tagger.tokenize(normalize(text))) {
    if (!t.surface_form.trim()) continue;
    const pron = t.pronunciation && t.pronunciation !== '*' ? t.pronunciation : t.reading && t.reading !== '*' ? t.reading : t.surface_form;
    const ct = charType(t.surface_form);
    words.push({ surface: t.surface_form, hira: kata2hira(pron), charType: ct === 7 || t.word_type === 'KNOWN' ? 6 : ct });
  }
  return romajiTokens(words);
}

// ---- The comparison ----

let modelsDir: string;
let standIns: KokoroStandIns;
let engine: KokoroEngine;
let session: ort.InferenceSession;
let tagger: Tokenizer<IpadicFeatures>;
const reader = new JapaneseReader();
const ctx = { tmpDir: tmpdir(), signal: new AbortController().signal, onProgress: () => {} };

beforeAll(async () => {
  modelsDir = await mkdtemp(join(tmpdir(), 'soundry-kokoro-ja-diff-'));
  // Stand-in tables seeded 1, 2 in catalog order: jf_alpha, jm_kumo.
  standIns = kokoroStandIns(['jf_alpha', 'jm_kumo']);
  await installKokoroStandIns(modelsDir, standIns);
  const phonemize = async () => {
    throw new Error('espeak must not phonemize Japanese for Kokoro');
  };
  engine = new KokoroEngine({ modelsDir, catalog: standIns.entries, phonemize, readJapanese: (t) => reader.words(t) });
  session = await ort.InferenceSession.create(join(modelsDir, standIns.model.name, 'onnx/model.onnx'));
  const dicPath = join(dirname(createRequire(import.meta.url).resolve('kuromoji/package.json')), 'dict');
  tagger = await new Promise((resolve, reject) => kuromoji.builder({ dicPath }).build((err, t) => (err ? reject(err) : resolve(t))));
}, 60_000);
afterAll(async () => {
  await engine?.close();
  await session?.release();
  await rm(modelsDir, { recursive: true, force: true });
});

const voiceOf = (name: string): Promise<EngineVoice> => kokoroVoiceOf(engine, name);

const LONG = Array.from({ length: 12 }, (_, i) => `${i + 1}番目の船は、静かな港で揺れていました。番人は一つずつ数えて、夜になるまで待っていました。`).join('');

describe('Kokoro Japanese front end against misaki\'s first generation (stand-in model, sample for sample)', () => {
  const cases: Array<{ voice: string; text: string; speed: number; seed: number }> = [
    { voice: 'jf_alpha', text: '東京へ行った。', speed: 1, seed: 1 },
    { voice: 'jm_kumo', text: 'コンピューターは、ちょっと待ってください！', speed: 1.2, seed: 2 },
    { voice: 'jf_alpha', text: '散歩して、新聞を読んで、銀行と本屋へ。案内は漢字で？', speed: 0.9, seed: 1 },
    { voice: 'jf_alpha', text: 'さんぽ、しんぶん、かんじ、ほんや、きんえん、ぜんいん。', speed: 1, seed: 1 },
    { voice: 'jm_kumo', text: '値段は1500円、電話は090です。2024年に100人と10000匹が来た。', speed: 1, seed: 2 },
    { voice: 'jf_alpha', text: '「本」を買った、と彼は言った。『雪国』の・点……', speed: 1.1, seed: 1 },
    { voice: 'jm_kumo', text: 'ティーパーティーでウィスキーとフォークを。シェフのジュースだ〜', speed: 0.8, seed: 2 },
    { voice: 'jf_alpha', text: 'ｶﾀｶﾅとＡＢＣ、３つの「ヴァイオリン」（楽器）です：はい；いいえ', speed: 1, seed: 1 },
    { voice: 'jf_alpha', text: LONG, speed: 1.3, seed: 1 },
  ];
  for (const c of cases) {
    it(`${c.voice} at speed ${c.speed}: ${c.text.slice(0, 24)}...`, async () => {
      const want = referencePhonemes(tagger, c.text);
      // The phoneme strings first (a readable diff when a rule goes wrong), then the model's output.
      expect(await japaneseToKokoro(c.text, (t) => reader.words(t))).toBe(want);
      const voice = await voiceOf(c.voice);
      const got = await engine.synthesize({ text: c.text, voice, prosody: { rate: c.speed, pitch: 1, pitchRange: 1, energy: 1 } }, ctx);
      const ref = await refSpeak(session, want, voiceTable(c.seed), c.speed);
      expect(got.sampleRate).toBe(24000);
      expect(got.channels[0]!.length).toBe(ref.length);
      expect(Array.from(got.channels[0]!)).toEqual(Array.from(ref));
    }, 60_000);
  }

  it('the sentences exercise every rule: ん before m/p/b, k/g, ɲ/ʨ/ʥ and n/t/d/ɾ/z, っ, ー, digraphs, numbers, punctuation', () => {
    const all = cases.map((c) => referencePhonemes(tagger, c.text)).join(' ');
    for (const piece of ['m', 'ŋ', 'ɲ', 'ɴ', 'ʔ', 'ː', 'kʲ', 'ɕ', 'ʨ', 'ʥ', 'tʲi', 'βi', 'ɸo', '“', '”', '«', '»', ',', '.', '!', '?', ':', ';', '—']) {
      expect(all).toContain(piece);
    }
    // LONG spans several 510-token chunks, each with its own style row and pads.
    expect(refSplit(refFilter(referencePhonemes(tagger, LONG))).length).toBeGreaterThan(1);
  });
});

describe('Kokoro Japanese, known answers', () => {
  const w = (surface: string, spoken: string | null, known = true) => ({ surface, spoken, known });

  it('reads kana with misaki\'s rules: ん by what follows, っ as a glottal stop that joins words, ー as length', () => {
    expect(kokoroJapanesePhonemes([w('散歩', 'サンポ'), w('新聞', 'シンブン'), w('案内', 'アンナイ'), w('銀行', 'ギンコー'), w('漢字', 'カンジ'), w('本', 'ホン')]))
      .toBe('sampo ɕimbɯɴ annai ɡʲiŋkoː kaɲʥi hoɴ');
    expect(kokoroJapanesePhonemes([w('行っ', 'イッ'), w('た', 'タ'), w('。', '。')])).toBe('iʔta.');
    // misaki's own output for こんにちは, as cool-japan/voirs quotes it (examples: "g2p(\"こんにちは\") # koɲɲiʨiβa").
    expect(kokoroJapanesePhonemes([w('こんにちは', 'コンニチワ')])).toBe('koɲɲiʨiβa');
    expect(kokoroJapanesePhonemes([w('ティー', 'ティー'), w('シェフ', 'シェフ'), w('ウィ', 'ウィ'), w('ぎぇ', null, false)])).toBe('tʲiː ɕeɸɯ βi ɡʲe');
    expect(kokoroJapanesePhonemes([w('「', '「'), w('本', 'ホン'), w('」', '」'), w('（', '（'), w('上', 'ウエ'), w('）', '）')])).toBe('“hoɴ” «ɯe»');
  });

  it('says nothing for a kanji it has no reading for, as misaki does for an unknown word', async () => {
    expect(kokoroJapanesePhonemes([w('檸', null, false), w('を', 'ヲ')])).toBe('o');
    expect(await reader.words('鷗外')).toEqual([w('鷗', null, false), w('外', 'ガイ')]);
  });

  it('reads numbers as num2kana does, quirks included, and longer ones digit by digit', () => {
    const cases: Array<[string, string]> = [
      ['0', 'ゼロ'], ['10', 'じゅう'], ['15', 'じゅうご'], ['40', 'よんじゅう'], ['100', 'ひゃく'], ['305', 'さんびゃくご'],
      ['1000', 'せん'], ['1500', 'せんごひゃく'], ['2024', 'にせんにじゅうよん'], ['8000', 'はっせん'], ['10000', 'いちまん'],
      ['11000', 'いちまんいっせん'], ['3000000', 'さんびゃくまん'], ['123456789', 'いちおくにせんさんびゃくよんじゅうごまんろくせんななひゃくはちじゅうきゅう'],
      ['007', 'なな'], ['1234567890', 'いちにさんよんごろくななはちきゅうゼロ'],
    ];
    for (const [digits, kana] of cases) expect([digits, japaneseNumber(digits)]).toEqual([digits, kana]);
    // The reference port agrees wherever misaki has an answer (up to nine digits).
    for (const [digits] of cases.filter(([d]) => d.length <= 9)) expect([digits, japaneseNumber(digits)]).toEqual([digits, convert(digits)]);
  });
});
