/**
 * Phrase tables of the built-in generator. Placeholders: {me} the speaker, {you} the host addressed,
 * {title} the source title, {topic} a key word of the point (only in `ask`, and never for zh/zh_yue/ja/ko),
 * {text} the source sentence(s) being explained, {n} a count.
 */
export interface Phrases {
  welcome: string[];
  reply: string[];
  /** Style 1..9 at index 0..8: [opener line, style question, style reaction]. */
  styles: Array<[string, string, string]>;
  ask: string[];
  askPlain: string[];
  explain: string[];
  more: string[];
  react: string[];
  /** The guest moves on to the next point unasked ({text}): not every point needs a question. */
  onward: string[];
  /** The host brings up a point ({text}) and the guest reacts. */
  bring: string[];
  transition: string[];
  recap: string[];
  signoff: string[];
  thanks: string[];
  shortNote: string;
  sections: { intro: string; point: string; recap: string; outro: string };
}
