/**
 * Offline script generator: TextRank key points from the source, voiced as a conversation between the
 * hosts with phrase templates per language and style, sized to the duration level's target. Same input,
 * same output: every template choice comes from a hash of the request.
 */
import { TaskFailure } from '../../domain/errors.js';
import { PHRASES } from './phrases/index.js';
import type { Phrases } from './phrases/types.js';
import { inLanguageOf } from './sentence-language.js';
import {
  isCharCounted,
  measureSize,
  renderTranscript,
  targetSize,
  type Highlight,
  type PodcastScript,
  type ScriptGenerator,
  type ScriptLine,
  type ScriptRequest,
  type SpeakerInfo,
} from './script.js';
import { rankSentences, speakable, termStats, topicWord, usableKeyPoint, type Sentence, type TermStats } from './textrank.js';

/**
 * How often a phrase pool (questions, leads) may go round in one episode. Twice brought questions back
 * within 2-4 minutes at level 5 (pools of ~13 questions), which a listener notices; once means the longest
 * episodes, after about 35 points, go on with the hosts taking the remaining points in turn, unphrased.
 */
const PHRASE_ROUNDS = 1;

/**
 * Longest sentence the hosts read out (key point or elaboration), in UTF-16 units: about 90 English words.
 * Longer "sentences" are lists or text without punctuation (or an attack: one 5 MB word), unlistenable, and
 * would make lines the audio step refuses (PODCAST_LIMITS.lineChars): a line holds at most a few of these.
 */
export const MAX_SPOKEN_CHARS = 600;

/** Within this fraction of the target the script counts as sized right. */
export const SIZE_TOLERANCE = 0.15;

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

function fill(t: string, vars: Record<string, string>): string {
  return t.replace(/\{(\w+)\}/g, (m, k: string) => vars[k] ?? m);
}

interface Plan {
  /** Key points in document order. */
  points: Sentence[];
  /** Extra sentences spoken after each key point. */
  elaboration: number;
}

interface Built {
  lines: ScriptLine[];
  /** Line ranges [start, end] of each point, parallel to plan.points. */
  ranges: Array<[number, number]>;
  sections: string[];
}

export class BuiltinScriptGenerator implements ScriptGenerator {
  readonly id = 'builtin';

  async generate(req: ScriptRequest, signal: AbortSignal): Promise<PodcastScript> {
    if (signal.aborted) throw new TaskFailure('Script generation was cancelled', true);
    const phrases = PHRASES[req.language] ?? PHRASES.en!;
    if (!req.speakers.length) throw new TaskFailure('No podcast voices are configured for this language');
    let all = rankSentences(speakableText(req.source.text, true));
    // A source made only of short lines (a spreadsheet, a list of formulas) keeps them rather than nothing.
    if (!all.some((x) => x.text.length > 10)) all = rankSentences(speakableText(req.source.text, false));
    // Sentences in another language (an untranslated paragraph of a manual, an English newsletter box on
    // an Arabic page) are not read out, unless nearly the whole source is in that other language.
    const inLanguage = all.map((x) => inLanguageOf(x.text, req.language));
    const share = inLanguage.filter(Boolean).length / Math.max(1, all.length);
    // The filter is on when the source is in the episode's language (its code and command lines aside).
    const filterOn = req.source.language === req.language || share >= 0.5;
    const speakableHere = (x: Sentence) => !filterOn || inLanguage[x.index]!;
    const candidates = all.filter((x) => usableKeyPoint(x) && speakableHere(x) && x.text.length <= MAX_SPOKEN_CHARS);
    const pool = candidates.length ? candidates : all.filter((s) => s.text.length > 10 && s.text.length <= MAX_SPOKEN_CHARS);
    if (!pool.length) {
      throw new TaskFailure(
        all.some((s) => s.text.length > MAX_SPOKEN_CHARS)
          ? `The source has no sentence short enough to read out (at most ${MAX_SPOKEN_CHARS} characters)`
          : 'The source has too little text to make a podcast from',
      );
    }
    const ranked = [...pool].sort((a, b) => b.score - a.score || a.index - b.index);
    const target = targetSize(req.duration, req.language);
    const seed = `${req.source.title}|${req.language}|${req.style}|${req.duration}`;
    const ctx = { req, phrases, all, seed, stats: termStats(all), speakableHere };

    // Size grows with both knobs; for each elaboration depth, binary-search the number of points.
    let best: { plan: Plan; size: number } | null = null;
    for (const elaboration of [0, 1, 2, 3]) {
      let lo = 1;
      let hi = ranked.length;
      while (lo <= hi) {
        const k = (lo + hi) >> 1;
        const plan = { points: ranked.slice(0, k).sort((a, b) => a.index - b.index), elaboration };
        const size = measureSize(build(ctx, plan, false).lines.map((l) => l.text).join(' '), req.language);
        if (!best || Math.abs(size - target) < Math.abs(best.size - target) - 1e-9) best = { plan, size };
        if (size < target) lo = k + 1;
        else hi = k - 1;
      }
      if (best && Math.abs(best.size - target) <= target * SIZE_TOLERANCE * 0.5) break;
    }
    const tooShort = best!.size < target * (1 - SIZE_TOLERANCE);
    const plan = best!.plan;
    // Pasted text has no title: its lead (first usable sentence) names the subject, cut at a word. The first
    // key point may start mid-argument ("Its high resolution ...").
    const lead = pool.reduce((a, b) => (b.index < a.index ? b : a));
    const title = req.source.title || titleFrom(lead.text);
    const built = build({ ...ctx, req: { ...req, source: { ...req.source, title } } }, plan, tooShort);
    const hightlights = highlightsOf(plan, built);
    const size = measureSize(built.lines.map((l) => l.text).join(' '), req.language);
    const unit = isCharCounted(req.language) ? 'characters' : 'words';
    const outline = [...built.sections];
    if (tooShort) outline.push(`Note: the source is too short for the requested duration (${size} of about ${target} ${unit}).`);
    const script: PodcastScript = {
      title,
      processed_content: summaryOf(plan.points, req.language),
      train_data: outline.join('\n'),
      podcast_script: built.lines,
      hightlights,
      podcast_script_txt: '',
    };
    script.podcast_script_txt = renderTranscript(script);
    return script;
  }
}

/** Drops lines that are not prose (headings without punctuation, tables), so sentences split cleanly. */
function speakableText(text: string, dropFragments: boolean): string {
  return text
    .split(/\n\s*\n/)
    // Slide titles, bullets and headings on lines of their own would run into the next sentence.
    .map((p) => speakable(p.split('\n').filter((line, _i, all) => !dropFragments || all.length === 1 || !isFragment(line)).join('\n')))
    .filter((p) => p.length > 0)
    .join('\n\n');
}

/** A short line without closing punctuation: a heading, a bullet, a slide title. */
function isFragment(line: string): boolean {
  const t = line.trim();
  if (!t) return true;
  if (/[.!?。！？…:;:"”’»」』)）]$/u.test(t)) return false;
  const cjk = (t.match(/[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]/gu) ?? []).length;
  return cjk ? cjk < 20 : t.split(/\s+/).length < 8;
}

/** A title for a source that has none (pasted text): a sentence without its end mark, cut at a word. */
function titleFrom(point: string): string {
  const t = point.replace(/[。．.!?！？]+$/u, '');
  // An English lead usually opens with its subject: "The James Webb Space Telescope is the largest ..."
  // announces better as "The James Webb Space Telescope" than as a sentence cut mid-phrase.
  const subject = /^(.+?)\s+(?:is|are|was|were|has|have|had|will|can|could|may|might|must|should|would)\s/u.exec(t)?.[1];
  if (subject && titleLanguage(t) === 'en' && /^[A-Z]/.test(subject) && !/[,;:()]/.test(subject)) {
    const words = subject.split(/\s+/).length;
    if (words >= 2 && words <= 8) return subject;
  }
  if (isCharCounted(titleLanguage(t))) return [...t].length <= 30 ? t : `${[...t].slice(0, 29).join('')}…`;
  return shorten(t, 70);
}

function titleLanguage(t: string): string {
  return /[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]/u.test(t) ? 'zh' : 'en';
}

interface Ctx {
  req: ScriptRequest;
  phrases: Phrases;
  all: Sentence[];
  seed: string;
  stats: TermStats;
  speakableHere: (s: Sentence) => boolean;
}

/** Stands for the addressee's name in a filled template until the speaker decides to say it. */
const YOU = '\ue000';

/**
 * Takes the addressee's name out of a line, with the punctuation that set it off: "Right, Leo." ->
 * "Right.", "Leo, what next?" -> "What next?", "شكرا يا ليلى." -> "شكرا.", "레오 님, 다음은?" -> "다음은?".
 */
export function dropVocative(text: string): string {
  const N = `${YOU}(?:さん| 님)?`;
  const upper = (c: string) => c.toUpperCase();
  return text
    .replace(new RegExp(`^${N}[,，、،]\\s*(\\p{Ll})?`, 'u'), (_m, c?: string) => (c ? upper(c) : ''))
    .replace(new RegExp(`([.!?。！？؟]\\s*)${N}[,，、،]\\s*(\\p{Ll})?`, 'gu'), (_m, a: string, c?: string) => a + (c ? upper(c) : ''))
    .replace(new RegExp(`\\s*[,，、،]\\s*${N}\\s*(?=[,，、،])`, 'gu'), '')
    .replace(new RegExp(`\\s*[,，、،]\\s*(?:يا\\s+)?${N}(?=\\s*[.!?。！？؟:：])`, 'gu'), '')
    .replace(new RegExp(`\\s+يا\\s+${N}(?=\\s*[.!?؟:])`, 'gu'), '')
    .replace(new RegExp(`(\\S)\\s?${N}(?=[,，、،])`, 'gu'), '$1');
}

function build(ctx: Ctx, plan: Plan, tooShort: boolean): Built {
  const { req, phrases: P, all, seed, stats } = ctx;
  const speakers = req.speakers;
  const host = speakers[0]!;
  const guests = speakers.length > 1 ? speakers.slice(1) : speakers;
  const pick = (list: string[], slot: string) => list[hash(`${seed}|${slot}`) % list.length]!;
  // Phrases are dealt like cards: none comes back before the rest of its pool has been used (so minutes
  // apart), and a pool goes round at most `rounds` times. After that the turn takes a form that needs no
  // phrase (no question: the other host simply goes on; no reaction).
  const decks = new Map<string, { order: number[]; pos: number; round: number }>();
  const take = (list: string[], pool: string, rounds: number): string | null => {
    let d = decks.get(pool);
    if (!list.length) return null;
    if (!d || d.pos >= d.order.length) {
      const round = d ? d.round + 1 : 1;
      if (round > rounds) return null;
      const last = d ? d.order[d.order.length - 1] : -1;
      const order = list.map((_, i) => i).sort((a, b) => hash(`${seed}|${pool}|${round}|${a}`) - hash(`${seed}|${pool}|${round}|${b}`));
      if (order.length > 1 && order[0] === last) order.push(order.shift()!);
      d = { order, pos: 0, round };
      decks.set(pool, d);
    }
    return list[d.order[d.pos++]!]!;
  };
  const deal = (list: string[], pool: string): string => take(list, pool, Infinity)!;
  const style = P.styles[(req.style >= 1 && req.style <= 9 ? req.style : 1) - 1]!;
  const noSpaceJoin = req.language === 'zh' || req.language === 'zh_yue' || req.language === 'ja';
  const sep = noSpaceJoin ? '' : ' ';
  const lines: ScriptLine[] = [];
  const turns = new Map<string, number>();
  const namedAt = new Map<string, number>();
  // A speaker never gets two lines in a row: a reaction and the next question become one turn. The
  // addressee's name is said at most once per turn and then not again for the speaker's next two turns:
  // hosts who name each other in every sentence sound scripted.
  const say = (sp: SpeakerInfo, text: string, to?: SpeakerInfo, always = false): number => {
    const last = lines[lines.length - 1];
    const merging = Boolean(last && last.role === sp.role);
    const turn = (turns.get(sp.role) ?? 0) + (merging ? 0 : 1);
    let out = text;
    if (to && out.includes(YOU)) {
      const lastNamed = namedAt.get(sp.role) ?? -99;
      const already = merging && lastNamed === turn;
      if (always || (!already && turn - lastNamed >= 3)) {
        out = out.replace(YOU, to.name);
        namedAt.set(sp.role, turn);
      }
      out = dropVocative(out).split(YOU).join(to.name);
    }
    const clean = out.replace(/\s+/g, ' ').trim();
    turns.set(sp.role, turn);
    if (last && merging) {
      // Chinese and Japanese run sentences together; a space there is a typo in the transcript.
      last.text = noSpaceJoin && /[。！？」』]$/.test(last.text) ? `${last.text}${clean}` : `${last.text} ${clean}`;
      return lines.length - 1;
    }
    lines.push({ role: sp.role, name: sp.name, avatar: sp.avatar, text: clean, voice_id: sp.voiceId });
    return lines.length - 1;
  };
  const vars = (me: SpeakerInfo, extra: Record<string, string> = {}) => ({ me: me.name, you: YOU, title: req.source.title, n: String(plan.points.length), ...extra });
  const k = plan.points.length;
  // Short scripts keep only what a minute allows: no reply, transitions or recap.
  const compact = k <= 2 && plan.elaboration === 0;
  const sections = [`1. ${P.sections.intro}`];

  const welcome = fill(pick(P.welcome, 'welcome'), vars(host)).replace(YOU, guests[0]!.name);
  const opener = compact ? '' : `${sep}${fill(style[0], vars(host))}`;
  say(host, `${welcome}${opener}${tooShort ? `${sep}${P.shortNote}` : ''}`, guests[0]!, true);
  if (!compact) say(guests[0]!, fill(pick(P.reply, 'reply'), vars(guests[0]!)), host, true);

  const ranges: Array<[number, number]> = [];
  const topics = new Set<string>();
  const used = new Set(plan.points.map((p) => p.index));
  // The style's own reaction is a signature line: at the first point, and once more in longer episodes.
  const styleReactAt = new Set([0, k >= 10 ? Math.floor(k / 2) : -1]);
  // Topic questions put a word of the source into a template; inflected languages would need its case.
  const topicAsks = P.ask.length > 0 && !isCharCounted(req.language) && req.language !== 'ru' && req.language !== 'ar';
  plan.points.forEach((point, i) => {
    const guest = guests[i % guests.length]!;
    let start = -1;
    // Turn shapes vary, so a long episode is not question, answer, reaction forty times over: half the
    // points are asked about, a quarter the guest raises unasked, a quarter the host brings up.
    let shape = i === 0 || compact ? 'ask' : deal(['ask', 'ask', 'onward', 'bring'], 'shape');
    // A raised point announces itself; a transition in front of it would say the same thing twice.
    const transition = shape === 'ask' && i > 0 && !compact && i % 3 === 0 ? take(P.transition, 'transition', 1) : null;
    if (transition) start = say(host, transition);
    const extra: string[] = [];
    for (let j = point.index + 1; extra.length < plan.elaboration && j < all.length && j <= point.index + plan.elaboration + 2; j++) {
      const s = all[j]!;
      if (!ctx.speakableHere(s) || s.text.length > MAX_SPOKEN_CHARS) continue;
      if (used.has(j) || s.paragraph !== point.paragraph && extra.length === 0 && j > point.index + 1) continue;
      used.add(j);
      extra.push(s.text);
    }
    // Elaborated points are split across both hosts so neither talks for minutes on end.
    const firstHalf = extra.slice(0, Math.ceil(extra.length / 2));
    const secondHalf = extra.slice(firstHalf.length);
    const text = [point.text, ...firstHalf].join(' ');
    let question: string | null = null;
    let topic: string | null = null;
    if (shape === 'ask') {
      const found = topicAsks ? topicWord(point, stats, req.language) : null;
      // A topic already asked about would make two identical questions.
      topic = found && !topics.has(found.toLowerCase()) ? found : null;
      question = i === 0 ? style[1] : (topic ? take(P.ask, 'ask', PHRASE_ROUNDS) : null) ?? take(P.askPlain, 'askPlain', PHRASE_ROUNDS);
      if (!question) topic = null;
      if (question && topic) topics.add(topic.toLowerCase());
    }
    // Pools used up: the guest carries on unasked, or the host brings the point up, or the guest just goes on.
    let intro: string | null = null;
    if (shape === 'ask' && !question) shape = 'onward';
    // Nobody carries one point straight into the next: after the guest's own line the host raises it, and
    // when the host has nothing left to raise it with after their own line, the guest goes on.
    const lastRole = lines[lines.length - 1]?.role;
    if (shape === 'onward' && lastRole === guest.role) shape = 'bring';
    if (shape === 'bring') intro = take(P.bring, 'bring', PHRASE_ROUNDS);
    if (shape === 'bring' && !intro) {
      if (lastRole === host.role) shape = 'onward';
      else intro = '{text}';
    }
    if (shape === 'onward') intro = take(P.onward, 'onward', PHRASE_ROUNDS) ?? '{text}';
    if (shape === 'bring') {
      if (start < 0) start = lines.length;
      say(host, fill(intro!, vars(host, { text })), guest);
      const react = take(P.react, 'react', 2);
      if (react) say(guest, fill(react, vars(guest)), host);
      if (secondHalf.length) say(guest, secondHalf.join(' '));
    } else {
      if (question) {
        const asked = say(host, fill(question, vars(host, { topic: topic ?? '' })), guest);
        if (start < 0) start = asked;
      }
      // Half the answers start straight with the matter; a prefix on every one is a tic.
      const lead = intro ?? (hash(`${seed}|lead${i}`) % 2 ? take(P.explain, 'explain', PHRASE_ROUNDS) ?? '{text}' : '{text}');
      const answered = say(guest, fill(lead, vars(guest, { text })), host);
      if (start < 0) start = answered;
      if (secondHalf.length) {
        const more = take(P.more, 'more', 2);
        if (more) say(host, fill(more, vars(host)), guest);
        say(guest, secondHalf.join(' '));
      }
    }
    // Not every answer needs a reaction; the next question can follow it directly.
    if (!compact && shape !== 'bring' && (styleReactAt.has(i) || hash(`${seed}|react${i}`) % 2 === 0)) {
      const react = styleReactAt.has(i) ? style[2] : take(P.react, 'react', 2);
      if (react) say(host, fill(react, vars(host)), guest);
    }
    ranges.push([start, lines.length - 1]);
    sections.push(`${i + 2}. ${P.sections.point} ${i + 1}: ${shorten(point.text, 90)}`);
  });

  if (k >= 3 && !compact) {
    say(host, fill(pick(P.recap, 'recap'), vars(host)), guests[0]!);
    sections.push(`${k + 2}. ${P.sections.recap}`);
  }
  if (!compact) say(guests[0]!, fill(pick(P.thanks, 'thanks'), vars(guests[0]!)), host, true);
  say(host, fill(pick(P.signoff, 'signoff'), vars(host)), guests[0]!);
  sections.push(`${sections.length + 1}. ${P.sections.outro}`);
  return { lines, ranges, sections };
}

function shorten(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1).replace(/\s+\S*$/, '')}…`;
}

/** The 3-6 most central points (by TextRank score), listed in script order. */
function highlightsOf(plan: Plan, built: Built): Highlight[] {
  const want = Math.min(plan.points.length, Math.max(3, Math.min(6, Math.round(plan.points.length / 2))));
  const chosen = plan.points
    .map((p, i) => ({ p, i }))
    .sort((a, b) => b.p.score - a.p.score || a.i - b.i)
    .slice(0, want)
    .sort((a, b) => a.i - b.i);
  return chosen.map(({ p, i }, index) => ({
    highlight: shorten(p.text, 160),
    index,
    script_start_index: built.ranges[i]![0],
    script_end_index: built.ranges[i]![1],
  }));
}

/** processed_content: the two or three most central sentences, in order. */
function summaryOf(points: Sentence[], language: string): string {
  const top = [...points].sort((a, b) => b.score - a.score).slice(0, 3).sort((a, b) => a.index - b.index);
  return top.map((s) => s.text).join(isCharCounted(language) && language !== 'ko' ? '' : ' ');
}
