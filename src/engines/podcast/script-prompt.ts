/**
 * What every language-model script generator shares, whatever runs the model (an OpenAI-compatible endpoint,
 * llm-generator.ts, or the embedded llama.cpp engine, llama-generator.ts): the prompts, the JSON shape the model
 * writes and its validation, the split of long sources for the map-reduce summaries, and the step that fills
 * voices, names and avatars from the request's speakers (never from the model).
 */
import { z } from 'zod';
import { inLanguageOf } from './sentence-language.js';
import { isCharCounted, PODCAST_STYLES, renderTranscript, targetSize, type Highlight, type PodcastScript, type ScriptRequest } from './script.js';

export const LANGUAGE_NAMES: Record<string, string> = {
  zh: 'Simplified Chinese (Mandarin)', zh_yue: 'Cantonese (written in Traditional Chinese characters)', en: 'English', ar: 'Arabic',
  ru: 'Russian', es: 'Spanish', fr: 'French', pt: 'Portuguese', de: 'German', ja: 'Japanese', ko: 'Korean',
};

const modelLine = z.object({ role: z.string(), text: z.string() });
/**
 * A line index as a model writes it. The grammar bounds its form (an integer), not its size: a small model can run on
 * with digits until JSON.parse reads Infinity, and refusing the whole script for one highlight's index wasted both
 * attempts (seen with the suite's stand-in model on an AVX2-only CPU). Indexes are clamped to the lines anyway.
 */
const modelIndex = z.preprocess(
  (v) => (typeof v === 'number' && !Number.isNaN(v) ? Math.max(-Number.MAX_SAFE_INTEGER, Math.min(Number.MAX_SAFE_INTEGER, Math.trunc(v))) : v),
  z.number().int(),
);
const modelHighlight = z.object({ highlight: z.string(), index: modelIndex, script_start_index: modelIndex, script_end_index: modelIndex });

export const modelScript = z.object({
  title: z.string().min(1),
  processed_content: z.string(),
  train_data: z.string(),
  // Empty lines are dropped in finishScript(); refusing the whole answer for one would waste a model call.
  podcast_script: z.array(modelLine).min(2),
  hightlights: z.array(modelHighlight),
});
export type ModelScript = z.infer<typeof modelScript>;

/** A reply cut at the token limit and closed (closeJsonPrefix) may lack the fields after the cut. */
export const closedScript = modelScript.extend({ train_data: z.string().default(''), hightlights: z.array(modelHighlight).default([]) });

/** The reply's schema, unbounded: what OpenAI-compatible endpoints get as response_format. */
export const JSON_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['title', 'processed_content', 'train_data', 'podcast_script', 'hightlights'],
  properties: {
    title: { type: 'string' },
    processed_content: { type: 'string' },
    train_data: { type: 'string' },
    podcast_script: {
      type: 'array',
      items: { type: 'object', additionalProperties: false, required: ['role', 'text'], properties: { role: { type: 'string' }, text: { type: 'string' } } },
    },
    hightlights: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['highlight', 'index', 'script_start_index', 'script_end_index'],
        properties: { highlight: { type: 'string' }, index: { type: 'integer' }, script_start_index: { type: 'integer' }, script_end_index: { type: 'integer' } },
      },
    },
  },
} as const;

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** The system and user messages asking for the script, `material` being the source or its chunk summaries. */
export function scriptMessages(req: ScriptRequest, material: string): { system: string; user: string } {
  const language = LANGUAGE_NAMES[req.language] ?? 'English';
  const size = targetSize(req.duration, req.language);
  const unit = isCharCounted(req.language) ? 'characters' : 'words';
  const hosts = req.speakers.map((s) => `${s.role}: ${s.name} (${s.gender})`).join('; ');
  const system = [
    'You write podcast scripts as JSON. Reply with one JSON object only, with keys:',
    'title (string), processed_content (a 2-3 sentence introduction of the episode), train_data (the outline, one section per line),',
    'podcast_script (array of {role, text}; role is one of the host letters), hightlights (3-6 items {highlight, index (0-based),',
    'script_start_index, script_end_index} giving the inclusive podcast_script index range that discusses each key point).',
  ].join(' ');
  const user = [
    `Write a natural, engaging conversation between the hosts ${hosts}. The hosts address each other by name.`,
    `Language: ${language}; every line must be in ${language}.`,
    `Style: ${PODCAST_STYLES[req.style] ?? PODCAST_STYLES[1]}.`,
    `Length: about ${size} ${unit} of dialogue in total (within 15%).`,
    'Structure: introduction, the key points with questions and explanations, a recap, a sign-off.',
    'Stay faithful to the source; do not invent facts.',
    `Source title: ${req.source.title}`,
    'Source:',
    material,
  ].join('\n');
  return { system, user };
}

/** Null when the script's lines are in the request's language; else the complaint the model is asked again with. */
export function languageProblem(req: ScriptRequest, m: ModelScript): string | null {
  const language = LANGUAGE_NAMES[req.language] ?? 'English';
  const texts = m.podcast_script.map((l) => l.text).filter((t) => t.trim());
  const ok = texts.filter((t) => inLanguageOf(t, req.language)).length;
  return ok >= texts.length * 0.8 ? null : `${texts.length - ok} of ${texts.length} lines are not in ${language}; write every line in ${language}`;
}

/** Paragraph-aligned chunks of at most `max` characters (a longer paragraph is cut). */
export function sourceChunks(text: string, max: number): string[] {
  const chunks: string[] = [];
  let cur = '';
  for (const para of text.split(/\n\s*\n/)) {
    if (cur && cur.length + para.length > max) {
      chunks.push(cur);
      cur = '';
    }
    cur = cur ? `${cur}\n\n${para}` : para.slice(0, max);
  }
  if (cur) chunks.push(cur);
  return chunks;
}

/** The map step's prompt for chunk `i` of `n`. */
export function summaryMessages(title: string, i: number, n: number, chunk: string): ChatMessage[] {
  return [
    { role: 'system', content: 'You summarise documents faithfully as concise bullet points of key facts, names and numbers.' },
    { role: 'user', content: `Part ${i + 1} of ${n} of "${title}". Summarise it in at most 250 words:\n\n${chunk}` },
  ];
}

/** The reduce step's material: the chunk summaries in order. */
export function joinSummaries(summaries: string[]): string {
  return summaries.map((s, i) => `Part ${i + 1}:\n${s.trim()}`).join('\n\n');
}

/**
 * Closes a JSON text cut short (a model stopped at its token limit): keeps everything up to the last complete
 * value inside a container and closes the containers open there. A grammar-constrained reply is always a valid
 * prefix, so the result parses; a value cut in half (a string, a number) is dropped whole, never kept truncated.
 * Returns null when no value was completed.
 */
export function closeJsonPrefix(text: string): string | null {
  type Frame = { close: '}' | ']'; expectKey: boolean };
  const stack: Frame[] = [];
  let inString = false;
  let escaped = false;
  let stringIsKey = false;
  let scalarStart = -1;
  let best: { at: number; closers: string } | null = null;
  const mark = (at: number) => {
    if (stack.length) best = { at, closers: stack.map((f) => f.close).reverse().join('') };
  };
  const endScalar = (at: number) => {
    if (scalarStart >= 0) {
      scalarStart = -1;
      mark(at);
    }
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') {
        inString = false;
        if (!stringIsKey) mark(i + 1);
      }
      continue;
    }
    const top = stack[stack.length - 1];
    if (/[\s,:}\]]/.test(c)) endScalar(i);
    if (c === '"') {
      inString = true;
      stringIsKey = top?.close === '}' && top.expectKey;
    } else if (c === '{' || c === '[') {
      stack.push({ close: c === '{' ? '}' : ']', expectKey: c === '{' });
      // An empty container is a complete value too: `[]` keeps the key that holds it.
      if (c === '[') mark(i + 1);
    } else if (c === '}' || c === ']') {
      stack.pop();
      if (!stack.length) return text.slice(0, i + 1);
      mark(i + 1);
    } else if (c === ':' && top) top.expectKey = false;
    else if (c === ',' && top) top.expectKey = top.close === '}';
    else if (!/\s/.test(c) && scalarStart < 0) scalarStart = i;
  }
  const cut = best as { at: number; closers: string } | null;
  if (!cut) return null;
  // `[` marked right after it: closing there gives an empty array, still valid.
  return text.slice(0, cut.at) + cut.closers;
}

/** The model's script with the request's hosts filled in, highlight indices mapped onto the lines kept. */
export function finishScript(m: ModelScript, req: ScriptRequest): PodcastScript {
  const byRole = new Map(req.speakers.map((s) => [s.role.toUpperCase(), s]));
  const byName = new Map(req.speakers.map((s) => [s.name.toLowerCase(), s]));
  let turn = 0;
  // The model's highlight indices count its empty lines too: map them onto the kept lines.
  const kept: number[] = [];
  m.podcast_script.forEach((l, i) => l.text.trim() && kept.push(i));
  const startAt = (i: number) => {
    const k = kept.findIndex((x) => x >= i);
    return k >= 0 ? k : kept.length - 1;
  };
  const endAt = (i: number) => Math.max(0, kept.filter((x) => x <= i).length - 1);
  const lines = m.podcast_script
    .filter((l) => l.text.trim())
    .map((l) => {
      // Unknown roles (a model inventing a third host) go to the hosts in turn.
      const sp = byRole.get(l.role.trim().toUpperCase()) ?? byName.get(l.role.trim().toLowerCase()) ?? req.speakers[turn++ % req.speakers.length]!;
      return { role: sp.role, name: sp.name, avatar: sp.avatar, text: l.text.trim(), voice_id: sp.voiceId };
    });
  const last = lines.length - 1;
  const hightlights: Highlight[] = m.hightlights
    .map((h) => ({ highlight: h.highlight, start: Math.max(0, Math.min(startAt(h.script_start_index), last)), end: Math.max(0, Math.min(endAt(h.script_end_index), last)) }))
    .filter((h) => h.highlight.trim() && h.start <= h.end)
    .slice(0, 6)
    .map((h, index) => ({ highlight: h.highlight, index, script_start_index: h.start, script_end_index: h.end }));
  const script: PodcastScript = { title: m.title.trim() || req.source.title, processed_content: m.processed_content, train_data: m.train_data, podcast_script: lines, hightlights, podcast_script_txt: '' };
  script.podcast_script_txt = renderTranscript(script);
  return script;
}
