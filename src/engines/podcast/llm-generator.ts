/**
 * Script generator over any OpenAI-compatible chat-completions endpoint. The model writes the dialogue;
 * we validate its JSON, retry malformed answers, summarise long sources chunk by chunk first (map-reduce),
 * and fill voices, names and avatars from the request's speakers, never from the model.
 */
import { z } from 'zod';
import { TaskFailure } from '../../domain/errors.js';
import { inLanguageOf } from './sentence-language.js';
import {
  isCharCounted,
  PODCAST_STYLES,
  renderTranscript,
  targetSize,
  type Highlight,
  type PodcastScript,
  type ScriptGenerator,
  type ScriptRequest,
} from './script.js';

export interface LlmGeneratorOptions {
  /** e.g. http://localhost:11434/v1 (the path up to /chat/completions). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  fetchImpl?: typeof fetch;
  /** Sources longer than this are summarised in chunks of this size first. Default 24,000 characters. */
  chunkChars?: number;
  /** Attempts per model call when the answer is malformed. Default 3. */
  attempts?: number;
  temperature?: number;
}

const LANGUAGE_NAMES: Record<string, string> = {
  zh: 'Simplified Chinese (Mandarin)', zh_yue: 'Cantonese (written in Traditional Chinese characters)', en: 'English', ar: 'Arabic',
  ru: 'Russian', es: 'Spanish', fr: 'French', pt: 'Portuguese', de: 'German', ja: 'Japanese', ko: 'Korean',
};

const modelScript = z.object({
  title: z.string().min(1),
  processed_content: z.string(),
  train_data: z.string(),
  // Empty lines are dropped in finish(); refusing the whole answer for one would waste a model call.
  podcast_script: z.array(z.object({ role: z.string(), text: z.string() })).min(2),
  hightlights: z.array(z.object({ highlight: z.string(), index: z.number().int(), script_start_index: z.number().int(), script_end_index: z.number().int() })),
});
type ModelScript = z.infer<typeof modelScript>;

const JSON_SCHEMA = {
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
};

type Format = 'json_schema' | 'json_object' | 'none';
interface Message {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** The first balanced JSON object in a reply (models wrap JSON in prose or ``` fences). */
export function extractJsonObject(text: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text)?.[1];
  for (const candidate of [text, fenced]) {
    if (!candidate) continue;
    try {
      return JSON.parse(candidate) as unknown;
    } catch {
      /* try the next form */
    }
  }
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start >= 0 && end > start) return JSON.parse(text.slice(start, end + 1)) as unknown;
  throw new SyntaxError('no JSON object in the reply');
}

export class LlmScriptGenerator implements ScriptGenerator {
  readonly id: string;
  private readonly fetchImpl: typeof fetch;
  // Per instance: what this endpoint accepted, so later calls skip formats it refused.
  private format: Format = 'json_schema';

  constructor(private readonly opts: LlmGeneratorOptions) {
    this.id = `llm:${opts.model}`;
    this.fetchImpl = opts.fetchImpl ?? fetch;
  }

  async generate(req: ScriptRequest, signal: AbortSignal): Promise<PodcastScript> {
    if (!req.speakers.length) throw new TaskFailure('No podcast voices are configured for this language');
    const material = await this.material(req, signal);
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
    // A model that drifts into English in a Japanese episode is asked again, as for malformed JSON.
    const inLanguage = (m: ModelScript): string | null => {
      const texts = m.podcast_script.map((l) => l.text).filter((t) => t.trim());
      const ok = texts.filter((t) => inLanguageOf(t, req.language)).length;
      return ok >= texts.length * 0.8 ? null : `${texts.length - ok} of ${texts.length} lines are not in ${language}; write every line in ${language}`;
    };
    const parsed = await this.callJson([{ role: 'system', content: system }, { role: 'user', content: user }], signal, inLanguage);
    return this.finish(parsed, req);
  }

  /** The source itself, or for long sources the chunk summaries joined (the map step). */
  private async material(req: ScriptRequest, signal: AbortSignal): Promise<string> {
    const max = this.opts.chunkChars ?? 24_000;
    const text = req.source.text;
    if (text.length <= max) return text;
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
    const summaries: string[] = [];
    for (const [i, chunk] of chunks.entries()) {
      const reply = await this.chat(
        [
          { role: 'system', content: 'You summarise documents faithfully as concise bullet points of key facts, names and numbers.' },
          { role: 'user', content: `Part ${i + 1} of ${chunks.length} of "${req.source.title}". Summarise it in at most 250 words:\n\n${chunk}` },
        ],
        'none',
        signal,
      );
      summaries.push(reply.trim());
    }
    return summaries.map((s, i) => `Part ${i + 1}:\n${s}`).join('\n\n');
  }

  private async callJson(messages: Message[], signal: AbortSignal, check: (m: ModelScript) => string | null = () => null): Promise<ModelScript> {
    const attempts = this.opts.attempts ?? 3;
    let lastError = '';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const convo = lastError
        ? [...messages, { role: 'user' as const, content: `Your previous answer was not valid (${lastError}). Reply with the JSON object only.` }]
        : messages;
      const reply = await this.chatWithFormat(convo, signal);
      try {
        const result = modelScript.safeParse(extractJsonObject(reply));
        if (result.success) {
          const problem = check(result.data);
          if (!problem) return result.data;
          lastError = problem;
          continue;
        }
        lastError = result.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
      } catch (err) {
        lastError = (err as Error).message;
      }
    }
    throw new TaskFailure(`The language model returned malformed scripts ${attempts} times`, true);
  }

  /** Tries the strictest response_format first and falls back when the server rejects it. */
  private async chatWithFormat(messages: Message[], signal: AbortSignal): Promise<string> {
    for (;;) {
      try {
        return await this.chat(messages, this.format, signal);
      } catch (err) {
        if (!(err instanceof FormatRejected) || this.format === 'none') throw err;
        this.format = this.format === 'json_schema' ? 'json_object' : 'none';
      }
    }
  }

  private async chat(messages: Message[], format: Format, signal: AbortSignal): Promise<string> {
    const body: Record<string, unknown> = { model: this.opts.model, messages, temperature: this.opts.temperature ?? 0.7 };
    if (format === 'json_schema') body.response_format = { type: 'json_schema', json_schema: { name: 'podcast_script', strict: true, schema: JSON_SCHEMA } };
    if (format === 'json_object') body.response_format = { type: 'json_object' };
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.opts.baseUrl.replace(/\/+$/, '')}/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body), signal });
    } catch (err) {
      if (signal.aborted) throw err;
      throw new TaskFailure('The language model service could not be reached', true);
    }
    const raw = await res.text();
    if (res.status === 400 && format !== 'none' && /response_format|json_schema|json_object/i.test(raw)) throw new FormatRejected();
    if (!res.ok) throw new TaskFailure(`The language model service answered with HTTP status ${res.status}`, res.status >= 500 || res.status === 429);
    let content: unknown;
    try {
      content = (JSON.parse(raw) as { choices?: Array<{ message?: { content?: unknown } }> }).choices?.[0]?.message?.content;
    } catch {
      content = undefined;
    }
    if (typeof content !== 'string') throw new TaskFailure('The language model service sent an answer without text', true);
    return content;
  }

  private finish(m: ModelScript, req: ScriptRequest): PodcastScript {
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
}

class FormatRejected extends Error {}
