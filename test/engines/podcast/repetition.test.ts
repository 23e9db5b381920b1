import { describe, expect, it } from 'vitest';
import { BuiltinScriptGenerator } from '../../../src/engines/podcast/builtin-generator.js';
import { estimateMinutes, measureSize, type ScriptRequest, type SpeakerInfo } from '../../../src/engines/podcast/script.js';

/**
 * Long episodes (levels 5-7, 7-15 minutes) must not make a listener notice a host phrasing again: every
 * sentence of a line that is not the source's own text is a template; no question comes back; another phrase at most once.
 */
const speakers: SpeakerInfo[] = [
  { role: 'A', name: 'Maya', avatar: '', voiceId: 'a', gender: 'female' },
  { role: 'B', name: 'Leo', avatar: '', voiceId: 'b', gender: 'male' },
];

/** A long source whose every sentence is distinct and recognisable (so template text can be told apart). */
function longSource(lang: string): string {
  const cjk = ['zh', 'zh_yue', 'ja', 'ko'].includes(lang);
  const paras: string[] = [];
  for (let p = 0; p < 60; p++) {
    const s: string[] = [];
    for (let i = 0; i < 5; i++) {
      const n = p * 5 + i + 1;
      if (lang === 'ja') s.push(`第${n}節では、町の川と図書館と市場が人々の暮らしを少しずつ変えていった様子が記録されています。`);
      else if (lang === 'zh' || lang === 'zh_yue') s.push(`第${n}节记录了城市的河流、图书馆和市场如何一点一点改变人们的日常生活。`);
      else if (lang === 'ko') s.push(`${n}번째 절에는 도시의 강과 도서관과 시장이 사람들의 생활을 조금씩 바꾼 과정이 기록되어 있습니다.`);
      else if (lang === 'ru') s.push(`Запись ${n} рассказывает, как река, библиотека и рынок постепенно меняли жизнь в городе номер ${n}.`);
      else if (lang === 'ar') s.push(`يشرح السجل رقم ${n} كيف غيّر النهر والمكتبة والسوق الحياة اليومية في المدينة رقم ${n}.`);
      else s.push(`Record ${n} explains how the river, the library and the market slowly changed daily life in town number ${n}.`);
    }
    paras.push(s.join(cjk ? '' : ' '));
  }
  return paras.join('\n\n');
}

const gen = new BuiltinScriptGenerator();
const signal = new AbortController().signal;

/** Sentences of the lines with the source's sentences and the hosts' names taken out. */
function templateSentences(lines: Array<{ text: string }>): string[] {
  const out: string[] = [];
  for (const l of lines) {
    const rest = l.text
      .replace(/(Record \d+ explains[^.]*\.|第\d+[節节][^。]*。|\d+번째 절에는[^.]*\.|Запись \d+ рассказывает[^.]*\.|يشرح السجل رقم[^.]*\.)/gu, ' ')
      .replace(/Maya|Leo/g, 'X');
    for (const s of rest.split(/(?<=[.!?。！？؟])\s*/u)) {
      const t = s.replace(/[\s,，、،:：]+$/u, '').trim();
      if (t.replace(/X/g, '').replace(/[^\p{L}\p{N}]/gu, '').length >= 2) out.push(t);
    }
  }
  return out;
}

describe('long built-in episodes do not repeat host phrasings', () => {
  for (const language of ['en', 'de', 'es', 'fr', 'ru', 'ar', 'pt', 'ja', 'zh', 'ko', 'zh_yue']) {
    it(`${language}, levels 5-7`, async () => {
      for (const [level, style] of [[5, 1], [6, 4], [7, 2], [7, 6]] as const) {
        const req: ScriptRequest = {
          source: { title: 'Town records', text: longSource(language), language, kind: 'text' },
          sourceData: 'text', language, style, duration: level, speakers,
        };
        const s = await gen.generate(req, signal);
        // Where each template sentence is heard, in minutes from the start.
        const heard = new Map<string, number[]>();
        let spoken = '';
        for (const l of s.podcast_script) {
          const at = estimateMinutes(spoken, language);
          for (const t of templateSentences([l])) heard.set(t, [...(heard.get(t) ?? []), at]);
          spoken += ` ${l.text}`;
        }
        // A question is never asked twice; another phrase (a reaction: "Makes sense.") comes back at most once.
        const isQuestion = (t: string) => /[?？؟]$/u.test(t);
        const repeated = [...heard].filter(([t, at]) => at.length > (isQuestion(t) ? 1 : 2));
        if (process.env.SHOW) console.log(language, level, s.podcast_script.length, repeated);
        expect(repeated, `${language} level ${level} style ${style}`).toEqual([]);
        // Running out of phrases must not turn the end of the episode into one host's monologue.
        const longest = Math.max(...s.podcast_script.map((l) => measureSize(l.text, language)));
        expect(longest, `${language} level ${level} style ${style}: longest turn`).toBeLessThanOrEqual(250);
      }
    });
  }
});
