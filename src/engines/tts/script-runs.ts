/**
 * Mixed-script text for espeak. A voice reads only its own language's script: an English voice says
 * "Chinese letter" for every ideograph and spells Cyrillic or Arabic letter by letter ("Hello 你好
 * Привет" took 10 s). Text is cut into runs by script, and each foreign run is read by the espeak
 * language that owns the script, in the same voice variant, so the speaker stays the same.
 */

export interface ScriptRun {
  text: string;
  /** espeak language to read this run with; null = the voice's own. */
  espeak: string | null;
}

type Script = 'cjk' | 'hangul' | 'cyrillic' | 'arabic' | 'greek' | 'hebrew' | 'thai' | 'devanagari';

const SCRIPTS: Array<[Script, RegExp]> = [
  ['cjk', /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u30FC\u3005]/u],
  ['hangul', /\p{Script=Hangul}/u],
  ['cyrillic', /\p{Script=Cyrillic}/u],
  ['arabic', /\p{Script=Arabic}/u],
  ['greek', /\p{Script=Greek}/u],
  ['hebrew', /\p{Script=Hebrew}/u],
  ['thai', /\p{Script=Thai}/u],
  ['devanagari', /\p{Script=Devanagari}/u],
];

const KANA = /[\p{Script=Hiragana}\p{Script=Katakana}]/u;

/** espeak language reading each script when the voice's own cannot. */
const READER: Record<Exclude<Script, 'cjk'>, string> = {
  hangul: 'ko',
  cyrillic: 'ru',
  arabic: 'ar',
  greek: 'el',
  hebrew: 'he',
  thai: 'th',
  devanagari: 'hi',
};

/** Scripts each spec language's voices read themselves (Latin, digits and punctuation: every voice). */
const NATIVE: Record<string, Script[]> = {
  zh: ['cjk'],
  zh_yue: ['cjk'],
  ja: ['cjk'],
  ko: ['hangul'],
  ru: ['cyrillic'],
  ar: ['arabic'],
};

function scriptOf(ch: string): Script | 'letter' | 'neutral' {
  for (const [script, re] of SCRIPTS) if (re.test(ch)) return script;
  return /\p{L}/u.test(ch) ? 'letter' : 'neutral';
}

/** Which espeak language reads a run of `script` for a voice of `language`; null = the voice itself. */
function readerFor(script: Script | 'letter', text: string, language: string): string | null {
  // espeak's Japanese voice spells Latin words letter by letter ("i p h o n e"); the others switch to English themselves.
  if (script === 'letter') return language === 'ja' && /\p{Script=Latin}/u.test(text) ? 'en-us' : null;
  const native = NATIVE[language] ?? [];
  if (script === 'cjk') {
    // Kana makes it Japanese (kanji included); ideographs alone are Chinese, read as the voice's kind if it has one.
    if (KANA.test(text)) return language === 'ja' ? null : 'ja';
    return native.includes('cjk') ? null : 'cmn';
  }
  return native.includes(script) ? null : READER[script];
}

/**
 * Splits `text` into runs a voice of `language` should read itself and runs to hand to another espeak
 * language. Spaces, digits and punctuation stay with the run they follow (a number after Russian words
 * is read in Russian). Text that needs no switch comes back as one run.
 */
export function splitScriptRuns(text: string, language: string): ScriptRun[] {
  const raw: Array<{ script: Script | 'letter'; text: string }> = [];
  for (const ch of text) {
    const s = scriptOf(ch);
    const last = raw[raw.length - 1];
    // A space ends a CJK word: kana decides per word, so Chinese words next to a Japanese one stay Chinese.
    const sameWord = last && last.script === s && !(s === 'cjk' && /\s$/u.test(last.text));
    if (s === 'neutral' || sameWord) {
      if (last) last.text += ch;
      else raw.push({ script: 'letter', text: ch });
    } else {
      raw.push({ script: s, text: ch });
    }
  }
  const runs: ScriptRun[] = [];
  for (const r of raw) {
    const espeak = readerFor(r.script, r.text, language);
    const last = runs[runs.length - 1];
    if (last && last.espeak === espeak) last.text += r.text;
    else runs.push({ text: r.text, espeak });
  }
  return runs.filter((r) => r.text.trim().length > 0);
}
