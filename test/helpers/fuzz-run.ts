import fc from 'fast-check';
import { isEnvelope, parseJson, rawRequest } from './raw-http.js';
import { fetchCase, rawCase, type BodyGen, type Case, type FetchCase } from './fuzz-cases.js';

/** Sending the fuzz's requests (fuzz-cases.ts) and judging the answers, for the suite and scripts/fuzz-remote.ts. */

const REQUEST_TIMEOUT_MS = 20_000;

// ---------------------------------------------------------------- sending and judging

export interface Outcome {
  status: number | null;
  body: string;
  contentType: string;
  /** The client would not send it (fetch refuses some header values): not an answer of the server. */
  unsent?: string;
}

function bodyBytes(body: BodyGen): Uint8Array<ArrayBuffer> | string {
  if (body.kind === 'text') return body.text;
  if (body.kind === 'binary') return new Uint8Array(body.bytes);
  const filler = 'ü'.repeat(Math.floor(body.bytes / 2));
  return body.shape === 'string-field' ? `{"text":"${filler}"}` : body.shape === 'array' ? `[${'1,'.repeat(Math.floor(body.bytes / 2))}1]` : filler;
}

/** An answer of the OpenAI-compatible routes: a JSON list on success, else OpenAI's `{error: {message, type}}`. */
function isOpenAiAnswer(o: Outcome): boolean {
  const json = parseJson(o.body) as { error?: { message?: unknown; type?: unknown }; object?: unknown } | null;
  if (o.status === 200) return json?.object === 'list' || !o.contentType.includes('json');
  return typeof json?.error?.message === 'string' && typeof json.error.type === 'string';
}

export async function sendFetch(baseUrl: string, c: FetchCase): Promise<Outcome> {
  const headers = new Headers();
  try {
    for (const [name, value] of c.headers) headers.append(name, value);
  } catch (err) {
    return { status: null, body: '', contentType: '', unsent: String(err) };
  }
  let res: Response;
  try {
    res = await fetch(`${baseUrl}${c.path}`, {
      method: c.method,
      headers,
      body: c.body && c.method !== 'GET' && c.method !== 'HEAD' ? bodyBytes(c.body) : undefined,
      redirect: 'manual',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    // fetch refuses some requests itself (a header it will not send, an invalid URL): nothing reached the server.
    if (err instanceof TypeError && (!cause?.code || cause.code === 'UND_ERR_INVALID_ARG' || cause.code === 'UND_ERR_NOT_SUPPORTED')) return { status: null, body: '', contentType: '', unsent: `${err.message}: ${cause?.message ?? ''}` };
    return { status: null, body: `request failed: ${String(err)} ${cause?.code ?? ''} ${cause?.message ?? ''}`, contentType: '' };
  }
  const body = await res.text().catch((err: unknown) => `body failed: ${String(err)}`);
  return { status: res.status, body, contentType: res.headers.get('content-type') ?? '' };
}

/** Whether the answer must be an envelope: everything but a non-envelope route's own answers. */
function mustBeEnvelope(c: Case, o: Outcome): boolean {
  if (c.via === 'raw') return true;
  const r = c.route;
  if (!r || r.answers === 'envelope') return true;
  // Under /v1 every answer, a wrong method's 404 included, is OpenAI's shape.
  if (r.answers === 'openai') return c.path.startsWith('/v1/') ? !isOpenAiAnswer(o) : true;
  // A method the route does not take, or a near-miss path, lands on the not-found envelope.
  if (!r.methods.includes(c.method)) return !(o.status !== null && o.status < 400 && !o.contentType.includes('json'));
  switch (r.answers) {
    case 'download':
      return !(o.status === 200 || o.status === 206 || o.status === 416);
    case 'asset':
      return !(o.status === 200);
    case 'system':
      // /healthz and /readyz answer their own JSON, 200 or 503; /metrics Prometheus text.
      return !(o.status === 200 || (o.status === 503 && !c.path.startsWith('/metrics')));
    case 'docs':
      return !(o.status !== null && o.status < 400);
    case 'console':
      // The console's HTML and scripts; anything it does not have is the not-found envelope.
      return !(o.status === 200);
  }
}

export function judge(c: Case, o: Outcome): string | null {
  if (o.unsent) return null;
  // Nothing but blank lines is no request (RFC 9112 2.2 lets a server ignore them): closing is the answer.
  if (o.status === null && c.via === 'raw' && c.bytes.trim() === '') return null;
  if (o.status === null) return `no answer (${o.body || 'connection closed without an answer'})`;
  const method = c.via === 'fetch' ? c.method : '';
  const healthProbe = c.via === 'fetch' && c.route?.answers === 'system' && !c.path.startsWith('/metrics') && c.route.methods.includes(c.method);
  if (o.status >= 500 && !(healthProbe && o.status === 503)) return `HTTP ${o.status}: ${o.body.slice(0, 300)}`;
  if (method === 'HEAD') return null;
  if (!mustBeEnvelope(c, o)) return null;
  const json = parseJson(o.body);
  if (!isEnvelope(json)) return `not an envelope (HTTP ${o.status}, ${o.contentType}): ${o.body.slice(0, 300)}`;
  if ((json as { code: number }).code === 100500) return `100500 (HTTP ${o.status}): ${o.body.slice(0, 300)}`;
  return null;
}

export function describeCase(c: Case): string {
  if (c.via === 'raw') return `raw ${JSON.stringify(c.bytes.length > 400 ? `${c.bytes.slice(0, 400)}...(${c.bytes.length} chars)` : c.bytes)}`;
  const body = c.body === undefined ? '' : c.body.kind === 'big' ? ` body=<${c.body.bytes} bytes ${c.body.shape}>` : c.body.kind === 'binary' ? ` body=<${c.body.bytes.length} binary bytes>` : ` body=${JSON.stringify(c.body.text.slice(0, 300))}${c.body.text.length > 300 ? `...(${c.body.text.length} chars)` : ''}`;
  return `${c.method} ${c.path.slice(0, 200)} headers=${JSON.stringify(c.headers.map(([n, v]) => [n, v.length > 100 ? `${v.slice(0, 100)}...(${v.length})` : v]))}${body}`;
}


/** Where a fuzz run sends its requests: a server's base URL (host and port for the raw TCP ones) and a valid key. */
export interface FuzzTarget {
  baseUrl: string;
  validKey: string;
}

export interface FuzzOptions {
  seed: number;
  runs: number;
  /** Requests stop being sent after this long: the count, not the clock, is what a run promises. */
  timeBoundMs: number;
  concurrency: number;
  /** Called before request `i` is sent and after it is judged (the suite samples memory there). */
  before?(i: number): void;
  after?(i: number): void;
}

export interface FuzzTally {
  fetch: number;
  raw: number;
  unsent: number;
  statuses: Map<number, number>;
  codes: Map<number, number>;
  failed: number;
  /** The first 20 bad answers, each with the request that got it. */
  failures: string[];
  elapsedMs: number;
}

/** Sends `runs` fuzzed requests (3 through fetch to 1 as raw TCP), `concurrency` at a time, and judges every answer. */
export async function runFuzz(target: FuzzTarget, opts: FuzzOptions): Promise<FuzzTally> {
  const url = new URL(target.baseUrl);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  // Generated in chunks as the run goes (each from the seed and its number), so the client holds a few
  // hundred requests at a time rather than all of them: its own memory stays out of the measurement.
  const arbitrary = fc.oneof({ weight: 3, arbitrary: fetchCase(target.validKey) }, { weight: 1, arbitrary: rawCase(target.validKey) });
  const CHUNK = 250;
  let chunk: { n: number; cases: Case[] } = { n: -1, cases: [] };
  const caseAt = (i: number): Case => {
    const n = Math.floor(i / CHUNK);
    if (chunk.n !== n) chunk = { n, cases: fc.sample(arbitrary, { seed: (opts.seed ^ Math.imul(n, 0x9e3779b1)) | 0, numRuns: CHUNK }) };
    return chunk.cases[i % CHUNK]!;
  };
  const tally: FuzzTally = { fetch: 0, raw: 0, unsent: 0, statuses: new Map(), codes: new Map(), failed: 0, failures: [], elapsedMs: 0 };
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < opts.runs && Date.now() - started < opts.timeBoundMs) {
      const i = next++;
      opts.before?.(i);
      const c = caseAt(i);
      let o: Outcome;
      if (c.via === 'raw') {
        tally.raw++;
        const answer = await rawRequest(port, Buffer.from(c.bytes, 'latin1'), { timeoutMs: REQUEST_TIMEOUT_MS, endAfterWrite: true, host: url.hostname });
        o = answer ? { status: answer.status, body: answer.body, contentType: answer.headers['content-type'] ?? '' } : { status: null, body: '', contentType: '' };
      } else {
        tally.fetch++;
        o = await sendFetch(target.baseUrl, c);
      }
      if (o.unsent) tally.unsent++;
      if (o.status !== null) tally.statuses.set(o.status, (tally.statuses.get(o.status) ?? 0) + 1);
      const code = (parseJson(o.body) as { code?: unknown } | undefined)?.code;
      if (typeof code === 'number') tally.codes.set(code, (tally.codes.get(code) ?? 0) + 1);
      const problem = judge(c, o);
      if (problem) {
        tally.failed++;
        if (tally.failures.length < 20) tally.failures.push(`#${i} ${describeCase(c)}\n    -> ${problem}`);
      }
      opts.after?.(i);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  tally.elapsedMs = Date.now() - started;
  return tally;
}

/** One line for a run's tally: statuses and envelope codes, sorted. */
export function describeTally(t: FuzzTally): string {
  const sorted = (m: Map<number, number>) => JSON.stringify(Object.fromEntries([...m].sort(([a], [b]) => a - b)));
  return `${t.fetch + t.raw} requests (${t.fetch} fetch, ${t.raw} raw TCP, ${t.unsent} refused by fetch itself) in ${t.elapsedMs} ms; statuses ${sorted(t.statuses)}; envelope codes ${sorted(t.codes)}`;
}
