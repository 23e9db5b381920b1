/**
 * Script generator over any OpenAI-compatible chat-completions endpoint. The model writes the dialogue;
 * we validate its JSON, retry malformed answers, summarise long sources chunk by chunk first (map-reduce),
 * and fill voices, names and avatars from the request's speakers, never from the model.
 */
import { TaskFailure } from '../../domain/errors.js';
import type { PodcastScript, ScriptGenerator, ScriptRequest } from './script.js';
import { finishScript, joinSummaries, JSON_SCHEMA, languageProblem, modelScript, scriptMessages, sourceChunks, summaryMessages, type ChatMessage as Message, type ModelScript } from './script-prompt.js';

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

type Format = 'json_schema' | 'json_object' | 'none';

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
    const { system, user } = scriptMessages(req, material);
    // A model that drifts into English in a Japanese episode is asked again, as for malformed JSON.
    const parsed = await this.callJson([{ role: 'system', content: system }, { role: 'user', content: user }], signal, (m) => languageProblem(req, m));
    return finishScript(parsed, req);
  }

  /** The source itself, or for long sources the chunk summaries joined (the map step). */
  private async material(req: ScriptRequest, signal: AbortSignal): Promise<string> {
    const max = this.opts.chunkChars ?? 24_000;
    const text = req.source.text;
    if (text.length <= max) return text;
    const chunks = sourceChunks(text, max);
    const summaries: string[] = [];
    for (const [i, chunk] of chunks.entries()) {
      summaries.push(await this.chat(summaryMessages(req.source.title, i, chunks.length, chunk), 'none', signal));
    }
    return joinSummaries(summaries);
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
}

class FormatRejected extends Error {}
