import { describe, expect, it } from 'vitest';
import { BuiltinScriptGenerator, SIZE_TOLERANCE } from '../../../src/engines/podcast/builtin-generator.js';
import { measureSize, PODCAST_LANGUAGES, renderTranscript, targetSize, type ScriptRequest, type SpeakerInfo } from '../../../src/engines/podcast/script.js';
import { headingLike, rankSentences, termStats, topicWord } from '../../../src/engines/podcast/textrank.js';
import type { ExtractedSource } from '../../../src/engines/podcast/sources.js';
import { TaskFailure } from '../../../src/domain/errors.js';
import { PODCAST_LIMITS } from '../../../src/domain/podcast-limits.js';

const speakers: SpeakerInfo[] = [
  { role: 'A', name: 'Maya', avatar: 'a.png', voiceId: 'voice-a', gender: 'female' },
  { role: 'B', name: 'Leo', avatar: 'b.png', voiceId: 'voice-b', gender: 'male' },
];

const SUBJECTS = ['river', 'bridge', 'market', 'library', 'harbour', 'garden', 'school', 'museum', 'station', 'factory', 'theatre', 'hospital'];
const VERBS = ['changed', 'shaped', 'supported', 'connected', 'challenged', 'renewed'];

/** A long, varied English source: 240 distinct sentences in paragraphs of six. */
function longEnglish(): string {
  const paras: string[] = [];
  for (let p = 0; p < 40; p++) {
    const s: string[] = [];
    for (let i = 0; i < 6; i++) {
      const a = SUBJECTS[(p + i) % SUBJECTS.length]!;
      const b = SUBJECTS[(p * 3 + i * 5 + 1) % SUBJECTS.length]!;
      s.push(`In chapter ${p + 1}, the ${a} ${VERBS[(p + i) % VERBS.length]} how the town used the ${b} during season number ${i + 1} of the long story.`);
    }
    paras.push(s.join(' '));
  }
  return paras.join('\n\n');
}

/** CJK sources: sentences built from a small vocabulary so the text is long and varied. */
function longCjk(lang: 'zh' | 'zh_yue' | 'ja' | 'ko'): string {
  const words = { zh: ['城市', '河流', '图书馆', '市场', '学校', '花园'], zh_yue: ['城市', '河流', '圖書館', '街市', '學校', '花園'], ja: ['町', '川', '図書館', '市場', '学校', '庭園'], ko: ['도시', '강', '도서관', '시장', '학교', '정원'] }[lang];
  const make = (a: string, b: string, n: number) =>
    lang === 'ko' ? `${n}번째 이야기에서 ${a}은 ${b}과 함께 사람들의 생활을 크게 바꾸었습니다.` : lang === 'ja' ? `第${n}章では、${a}が${b}と一緒に人々の暮らしを大きく変えました。` : lang === 'zh_yue' ? `喺第${n}章入面，${a}同${b}一齊改變咗大家嘅生活，佢哋係咁講嘅。` : `在第${n}章中，${a}和${b}一起大大改变了人们的生活方式。`;
  const paras: string[] = [];
  for (let p = 0; p < 40; p++) paras.push([0, 1, 2, 3, 4].map((i) => make(words[(p + i) % 6]!, words[(p * 5 + i + 1) % 6]!, p * 5 + i + 1)).join(''));
  return paras.join('\n\n');
}

function request(language: string, style: number, duration: number, text: string): ScriptRequest {
  const source: ExtractedSource = { title: 'Town stories', text, language, kind: 'text' };
  return { source, sourceData: 'text', language, style, duration, speakers };
}

const gen = new BuiltinScriptGenerator();
const signal = new AbortController().signal;
const spoken = (lines: Array<{ text: string }>) => lines.map((l) => l.text).join(' ');

describe('BuiltinScriptGenerator', () => {
  for (const language of PODCAST_LANGUAGES) {
    it(`${language}: structure, size near target, valid highlights, deterministic`, async () => {
      const text = ['zh', 'zh_yue', 'ja', 'ko'].includes(language) ? longCjk(language as 'zh') : longEnglish();
      for (const style of [1, 4, 9]) {
        for (const duration of [2, 4, 7]) {
          const req = request(language, style, duration, text);
          const s = await gen.generate(req, signal);
          expect(s.podcast_script.length).toBeGreaterThan(3);
          expect(new Set(s.podcast_script.map((l) => l.role))).toEqual(new Set(['A', 'B']));
          for (const l of s.podcast_script) {
            const sp = speakers.find((x) => x.role === l.role)!;
            expect(l).toMatchObject({ name: sp.name, avatar: sp.avatar, voice_id: sp.voiceId });
            expect(l.text.length).toBeGreaterThan(0);
            expect(l.text).not.toMatch(/\{\w+\}/);
          }
          // No speaker has two turns in a row.
          s.podcast_script.forEach((l, i) => i && expect(l.role).not.toBe(s.podcast_script[i - 1]!.role));
          // Hosts address each other by name.
          expect(s.podcast_script[0]!.text).toContain('Leo');
          const size = measureSize(spoken(s.podcast_script), language);
          const target = targetSize(duration, language);
          expect(Math.abs(size - target) / target, `${language} style ${style} level ${duration}: ${size} vs ${target}`).toBeLessThanOrEqual(SIZE_TOLERANCE);
          expect(s.hightlights.length).toBeGreaterThanOrEqual(3);
          expect(s.hightlights.length).toBeLessThanOrEqual(6);
          s.hightlights.forEach((h, i) => {
            expect(h.index).toBe(i);
            expect(h.script_start_index).toBeGreaterThanOrEqual(0);
            expect(h.script_end_index).toBeGreaterThanOrEqual(h.script_start_index);
            expect(h.script_end_index).toBeLessThan(s.podcast_script.length);
          });
          expect(s.train_data.split('\n').length).toBeGreaterThanOrEqual(3);
          expect(s.podcast_script_txt).toBe(renderTranscript(s));
          expect(await gen.generate(req, signal)).toEqual(s);
        }
      }
    });
  }

  it('one 5 MB word (far past the create limit) fails with a clear TaskFailure, never a stack overflow', async () => {
    const p = gen.generate(request('en', 1, 2, `’${'a'.repeat(5 * 1024 * 1024)}`), signal);
    await expect(p).rejects.toBeInstanceOf(TaskFailure);
    await expect(p).rejects.toThrow(/no sentence short enough to read out \(at most 600 characters\)/);
  });

  it('never reads out a sentence longer than MAX_SPOKEN_CHARS, and keeps every line within the audio step\'s limit', async () => {
    const run = 'x'.repeat(2000);
    const text = longEnglish().replace(/(season number 3 of the long story\.)/g, `$1 The ${run} stood there. `);
    const s = await gen.generate(request('en', 1, 7, text), signal);
    for (const l of s.podcast_script) {
      expect(l.text).not.toContain(run);
      expect(l.text.length).toBeLessThanOrEqual(PODCAST_LIMITS.lineChars);
    }
  });

  it('styles change the wording', async () => {
    const a = await gen.generate(request('en', 1, 3, longEnglish()), signal);
    const b = await gen.generate(request('en', 9, 3, longEnglish()), signal);
    expect(a.podcast_script_txt).not.toBe(b.podcast_script_txt);
  });

  it('level 1 stays short and a short source is reported in the outline', async () => {
    const one = await gen.generate(request('en', 2, 1, longEnglish()), signal);
    expect(measureSize(spoken(one.podcast_script), 'en')).toBeLessThanOrEqual(targetSize(1, 'en') * 1.5);
    const short = await gen.generate(request('en', 1, 7, longEnglish().split('\n\n').slice(0, 2).join('\n\n')), signal);
    expect(short.train_data).toMatch(/too short/);
    expect(short.podcast_script.length).toBeGreaterThan(3);
  });

  it('works with three hosts', async () => {
    const third: SpeakerInfo = { role: 'C', name: 'Ana', avatar: '', voiceId: 'voice-c', gender: 'female' };
    const s = await gen.generate({ ...request('es', 6, 3, longEnglish()), speakers: [...speakers, third] }, signal);
    expect(new Set(s.podcast_script.map((l) => l.role))).toEqual(new Set(['A', 'B', 'C']));
  });

  it('every style in every language: no placeholder or name marker is left in a line', async () => {
    for (const language of PODCAST_LANGUAGES) {
      const text = ['zh', 'zh_yue', 'ja', 'ko'].includes(language) ? longCjk(language as 'zh') : longEnglish();
      for (let style = 1; style <= 9; style++) {
        const s = await gen.generate(request(language, style, 3, text), signal);
        for (const l of s.podcast_script) expect(l.text, `${language} style ${style}`).not.toMatch(/\{\w+\}|\ue000/u);
      }
    }
  });

  it('a listener hears no host line twice, the style question once, and names only now and then', async () => {
    for (const [style, level] of [1, 2, 3, 4, 5, 6, 7, 8, 9].flatMap((st) => [[st, 2], [st, 3]] as const)) {
      const s = await gen.generate(request('en', style, level, longEnglish()), signal);
      const hostLines = s.podcast_script.filter((l) => l.role === 'A').map((l) => l.text);
      if (level === 2) expect(new Set(hostLines).size, `style ${style}`).toBe(hostLines.length);
      // Template sentences (not the source's) are never repeated word for word.
      const sentences = hostLines.join(' ').split(/(?<=[.!?])\s+/);
      const counts = new Map<string, number>();
      for (const x of sentences) counts.set(x, (counts.get(x) ?? 0) + 1);
      // A 1-3 minute episode never repeats one; a longer one only after the whole pool has been used.
      expect([...counts].filter(([, n]) => n > (level === 2 ? 1 : 3)), `style ${style} level ${level}`).toEqual([]);
      // After the introductions, the other host's name is in at most every other line.
      const named = s.podcast_script.slice(2).filter((l) => l.text.includes(l.role === 'A' ? 'Leo' : 'Maya')).length;
      expect(named, `style ${style}`).toBeLessThanOrEqual(Math.ceil((s.podcast_script.length - 2) / 2));
    }
  });

  it('sentences in another language than the episode are not read out', async () => {
    const fr = [
      'Le système de gestion des paquets de Debian permet d’installer des logiciels depuis une archive cohérente et fiable.',
      'Les paquets sont vérifiés avant leur installation et les dépendances sont résolues automatiquement par le système.',
      'The current Debian package management system which can utilize all these resources is the Advanced Packaging Tool.',
      'Les miroirs de l’archive sont répartis dans le monde entier pour que chacun puisse télécharger rapidement les paquets.',
      'La commande apt est recommandée pour toutes les opérations interactives sur la ligne de commande du système.',
      'Les mises à jour de sécurité sont publiées régulièrement et peuvent être installées sans redémarrer la machine.',
    ];
    const s = await gen.generate(request('fr', 1, 2, fr.join(' ')), signal);
    expect(s.podcast_script_txt).not.toMatch(/Advanced Packaging Tool/);
    expect(s.podcast_script_txt).toMatch(/miroirs|mises à jour|commande apt/);
  });

  it('a topic question names a noun of the sentence, never an adjective or a verb form', () => {
    const de = rankSentences('Debian ist eine Organisation Freiwilliger, die konsistente Distributionen vorkompilierter Binärpakete erstellt. Das Archiv wird von vielen Spiegeln bereitgestellt. Es ist auch als DVD erhältlich.');
    const wordDe = topicWord(de[0]!, termStats(de), 'de');
    expect(wordDe && /^\p{Lu}/u.test(wordDe)).toBe(true);
    const en = rankSentences('This sequence of code points needs to be represented in memory as a set of code units. Bytes are mapped later. Nothing else happens here today.');
    expect(topicWord(en[0]!, termStats(en), 'en')).not.toBe('represented');
  });

  it('pasted text without a title: the hosts announce a real title, cut at a word, never ""', async () => {
    const req = request('en', 1, 2, longEnglish());
    const s = await gen.generate({ ...req, source: { ...req.source, title: '' } }, signal);
    expect(s.title.length).toBeGreaterThan(10);
    expect(s.title).toMatch(/(\w|…)$/);
    expect(s.podcast_script[0]!.text).toContain(`"${s.title}"`);
    expect(s.podcast_script[0]!.text).not.toContain('""');
  });

  it('pasted English text is titled by the subject of its lead, and topic questions give a common noun its article', async () => {
    const text = 'The James Webb Space Telescope is the largest optical telescope in space. Its high resolution and sensitivity allow it to view objects too old, distant, or faint for the Hubble Space Telescope. This enables investigations across many fields of astronomy and cosmology, such as observation of the first stars and the formation of the first galaxies. The telescope was launched in December 2021 and reached its destination a month later.';
    const req = request('en', 1, 2, text);
    const s = await gen.generate({ ...req, source: { ...req.source, title: '' } }, signal);
    expect(s.title).toBe('The James Webb Space Telescope');
    const en = rankSentences('The telescope was launched in December 2021 and reached its destination a month later. Nothing else happens here today. Bytes are mapped later.');
    expect(topicWord(en[0]!, termStats(en), 'en')).toMatch(/^the \p{Ll}/u);
  });

  it('slide titles and bullets on their own lines do not run into the next sentence', async () => {
    const slides = [1, 2, 3, 4, 5, 6].map((i) => `Slide ${i} title\nFirst bullet\nSecond bullet\nThe archive number ${i} is mirrored on many servers around the world for faster downloads by every user.`).join('\n\n');
    const s = await gen.generate(request('en', 1, 2, slides), signal);
    expect(s.podcast_script_txt).not.toMatch(/bullet|Slide \d title/);
    expect(s.podcast_script_txt).toMatch(/is mirrored on many servers/);
  });

  it('a source of short lines only (a spreadsheet) still makes a script', async () => {
    const rows = ['Alpha, Beta, Gamma, Delta', '1, 2, 3, 4', 'Quarterly revenue, 120, 135, 150', 'Quarterly costs, 80, 90, 95', 'Head count, 10, 12, 14'].join('\n');
    const s = await gen.generate(request('en', 1, 1, rows), signal);
    expect(s.podcast_script.length).toBeGreaterThan(1);
  });

  it('numbered headings and table-of-contents lines from a PDF are not sentences', () => {
    expect(headingLike('1.2.2 ファイルシステムの内側とその構造について.')).toBe(true);
    expect(headingLike('11 データー変換11.1 テキストデーター変換ツール.')).toBe(true);
    expect(headingLike('3.1 Installing packages from the archive.')).toBe(true);
    expect(headingLike('Debian のパッケージ管理システムは多彩な歴史があり、多くの選択肢があります。')).toBe(false);
    const ranked = rankSentences('1.2.2 ファイルシステムの内側とその構造について. Debian のパッケージ管理システムは多彩な歴史があり、多くの選択肢があります。');
    expect(ranked.map((x) => x.text)).toEqual(['Debian のパッケージ管理システムは多彩な歴史があり、多くの選択肢があります。']);
  });
});
