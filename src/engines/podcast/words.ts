/**
 * Words of a text without a regular expression. `/[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*\/gu` was the
 * definition, but V8 backtracks such a `+` on its own stack: one word of a few million letters (a 5 MB
 * one-word script) threw "RangeError: Maximum call stack size exceeded". This is one linear pass.
 */

const WORD_CHAR = /[\p{L}\p{N}]/u;
const JOINERS = new Set(["'", '’', '-']);

/**
 * Calls `onWord(start, end)` for each word: a run of letters and digits, where an apostrophe or hyphen
 * between two of them joins ("don't", "well-known"). Characters for which `isBreak` is true (e.g. CJK
 * ideographs in a language counted by characters) end words and are not part of any.
 */
export function forEachWord(text: string, onWord: (start: number, end: number) => void, isBreak?: (ch: string) => boolean): void {
  const isWord = (ch: string) => WORD_CHAR.test(ch) && !isBreak?.(ch);
  let start = -1;
  let i = 0;
  while (i < text.length) {
    const ch = String.fromCodePoint(text.codePointAt(i)!);
    const at = i;
    i += ch.length;
    if (isWord(ch)) {
      if (start < 0) start = at;
      continue;
    }
    if (start >= 0 && JOINERS.has(ch) && i < text.length && isWord(String.fromCodePoint(text.codePointAt(i)!))) continue;
    if (start >= 0) onWord(start, at);
    start = -1;
  }
  if (start >= 0) onWord(start, text.length);
}

/** The words of a text, in order (see forEachWord). */
export function wordsOf(text: string): string[] {
  const out: string[] = [];
  forEachWord(text, (s, e) => out.push(text.slice(s, e)));
  return out;
}
