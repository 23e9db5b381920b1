import fc from 'fast-check';
import { parseJson } from './raw-http.js';

/**
 * The fuzz's requests (fuzz-run.ts sends and judges them), shared by test/http/fuzz.test.ts (against the suite's own server) and
 * scripts/fuzz-remote.ts (against a Soundry that is already running, as an outside client would attack it).
 * Seeded: the same seed sends the same requests.
 */

/** The upload limit the suite's server runs with; the generators' uploads reach twice this. */
export const FUZZ_UPLOAD_MAX_BYTES = 100_000;
const UPLOAD_MAX_BYTES = FUZZ_UPLOAD_MAX_BYTES;

export const API = '/audio/api/v1/api-keys';

/** How a route answers when it succeeds: envelopes, or something else (documented in docs/api.md). */
export type Answers = 'envelope' | 'download' | 'system' | 'docs' | 'asset' | 'openai' | 'console';
export interface RouteEntry {
  methods: readonly string[];
  url: string;
  answers: Answers;
  /** A valid-looking body the fuzzer mutates. */
  template?: Record<string, unknown>;
}

/** Every route of the app; the first test checks this table against the app's own route list. */
export const ROUTES: readonly RouteEntry[] = [
  { methods: ['POST'], url: `${API}/tts/task/create`, answers: 'envelope', template: { voice_id: 1, emotion: 0, speed: 1, language: 'en', text: 'Hello there.' } },
  { methods: ['POST'], url: `${API}/tts/task/get`, answers: 'envelope', template: { global_id: 'abc' } },
  { methods: ['GET', 'HEAD'], url: `${API}/tts/voices`, answers: 'envelope' },
  { methods: ['POST'], url: `${API}/separation/task/create`, answers: 'envelope', template: { model_type: 350, inputurl: 'http://127.0.0.1:9/a.mp3', output_format: 'mp3' } },
  { methods: ['POST'], url: `${API}/separation/task/get`, answers: 'envelope', template: { job_id: 'abc' } },
  { methods: ['POST'], url: `${API}/enhance/task/create`, answers: 'envelope', template: { inputurl: 'http://127.0.0.1:9/a.wav', enhance_type: { normalize: true } } },
  { methods: ['POST'], url: `${API}/enhance/task/get`, answers: 'envelope', template: { job_id: 'abc' } },
  { methods: ['POST'], url: `${API}/podcast/script/create`, answers: 'envelope', template: { source_type: 4, text: 'A short text about sound.', style: 1, duration: 2, language: 'en' } },
  { methods: ['POST'], url: `${API}/podcast/script/get`, answers: 'envelope', template: { global_id: 'abc' } },
  { methods: ['POST'], url: `${API}/podcast/audio/create`, answers: 'envelope', template: { source_type: 4, text: 'A short text.', speakers: [1, 2], language: 'en' } },
  { methods: ['POST'], url: `${API}/podcast/audio/get`, answers: 'envelope', template: { global_id: 'abc' } },
  { methods: ['GET', 'HEAD'], url: `${API}/podcast/voices`, answers: 'envelope' },
  { methods: ['POST'], url: `${API}/files/upload`, answers: 'envelope' },
  { methods: ['GET', 'HEAD'], url: `${API}/account/balance`, answers: 'envelope' },
  { methods: ['GET', 'HEAD'], url: '/admin/api/enabled', answers: 'envelope' },
  { methods: ['GET', 'HEAD'], url: '/', answers: 'console' },
  { methods: ['GET', 'HEAD'], url: '/console/:file', answers: 'console' },
  { methods: ['GET', 'HEAD'], url: '/assets/voices/:file', answers: 'asset' },
  { methods: ['GET', 'HEAD'], url: '/files/*', answers: 'download' },
  { methods: ['GET', 'HEAD'], url: '/healthz', answers: 'system' },
  { methods: ['GET', 'HEAD'], url: '/readyz', answers: 'system' },
  { methods: ['GET', 'HEAD'], url: '/metrics', answers: 'system' },
  { methods: ['GET', 'HEAD'], url: '/openapi.json', answers: 'docs' },
  { methods: ['GET', 'HEAD'], url: '/docs', answers: 'docs' },
  { methods: ['GET', 'HEAD'], url: '/docs/', answers: 'docs' },
  { methods: ['GET', 'HEAD'], url: '/docs/static/index.html', answers: 'docs' },
  { methods: ['GET', 'HEAD'], url: '/docs/static/swagger-initializer.js', answers: 'docs' },
  { methods: ['GET', 'HEAD'], url: '/docs/static/*', answers: 'docs' },
  { methods: ['GET', 'HEAD'], url: '/docs/json', answers: 'docs' },
  { methods: ['GET', 'HEAD'], url: '/docs/yaml', answers: 'docs' },
  // OpenAI-compatible routes answer OpenAI's bodies, never envelopes (docs/api.md).
  { methods: ['POST'], url: '/v1/audio/speech', answers: 'openai', template: { model: 'tts-1', voice: 'alloy', input: 'Hello there.' } },
  { methods: ['GET', 'HEAD'], url: '/v1/models', answers: 'openai' },
  { methods: ['GET', 'HEAD'], url: '/v1/audio/voices', answers: 'openai' },
];


// ---------------------------------------------------------------- generators

export interface FetchCase {
  via: 'fetch';
  method: string;
  path: string;
  headers: [string, string][];
  body?: BodyGen;
  route: RouteEntry | null;
}
export interface RawCase {
  via: 'raw';
  bytes: string;
}
export type BodyGen = { kind: 'text'; text: string } | { kind: 'big'; bytes: number; shape: 'string-field' | 'garbage' | 'array' } | { kind: 'binary'; bytes: Uint8Array };
export type Case = FetchCase | RawCase;

const weird = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', '\ud800', '💥', 'ｆｕｌｌ', '\u202e', 'null', 'true', '-1', '1e309', 'NaN', '__proto__', 'constructor', '%00', '../..', 'a'.repeat(5000)),
);
const hugeNumber = fc.oneof(
  fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, -0, 2 ** 53, 1e-320, 4294967296, -2147483649),
  fc.double(),
  fc.integer(),
);
const jsonish: fc.Arbitrary<unknown> = fc.oneof(fc.jsonValue({ maxDepth: 4 }), weird, hugeNumber, fc.constant(null), fc.array(weird, { maxLength: 5 }));

/** Deep nesting within the body limit: arrays and objects up to a few hundred levels. */
const deep = fc.tuple(fc.integer({ min: 10, max: 400 }), fc.boolean()).map(([depth, asArray]) => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = asArray ? [v] : { a: v };
  return v;
});

/** A template body with fields removed, retyped, replaced or added. */
function mutatedBody(template: Record<string, unknown>): fc.Arbitrary<unknown> {
  const keys = Object.keys(template);
  const mutation = fc.oneof(
    fc.record({ op: fc.constant('drop' as const), key: fc.constantFrom(...keys) }),
    fc.record({ op: fc.constant('set' as const), key: fc.constantFrom(...keys), value: fc.oneof(jsonish, deep) }),
    fc.record({ op: fc.constant('add' as const), key: fc.oneof(weird, fc.constantFrom('__proto__', 'constructor', 'prototype')), value: jsonish }),
  );
  return fc.array(mutation, { minLength: 0, maxLength: 4 }).map((ops) => {
    const body: Record<string, unknown> = { ...template };
    for (const op of ops) {
      if (op.op === 'drop') delete body[op.key];
      else Object.defineProperty(body, op.key, { value: op.value, enumerable: true, configurable: true, writable: true });
    }
    return body;
  });
}

const jsonBody = (route: RouteEntry | null): fc.Arbitrary<BodyGen> =>
  fc.oneof(
    { weight: 5, arbitrary: (route?.template ? mutatedBody(route.template) : jsonish).map((v) => ({ kind: 'text' as const, text: JSON.stringify(v) ?? 'undefined' })) },
    { weight: 2, arbitrary: jsonish.map((v) => ({ kind: 'text' as const, text: JSON.stringify(v) ?? '' })) },
    { weight: 1, arbitrary: deep.map((v) => ({ kind: 'text' as const, text: JSON.stringify(v) })) },
    // Not JSON: cut JSON, stray characters, JavaScript literals, comments, BOMs, lone surrogates.
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.constantFrom('{', '{"a":', '{"text": "x"', "{'a': 1}", '{"a": 1,}', '[1,2', 'NaN', 'undefined', '{"a": 01}', '\ufeff{}', '{"a": "\\ud800"}', '{} {}', '/* */ {}', '{"__proto__": {"x": 1}}', '{"constructor": {"prototype": {}}}'),
        fc.string({ unit: 'binary', maxLength: 200 }),
      ).map((text) => ({ kind: 'text' as const, text })),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2000 }).map((bytes) => ({ kind: 'binary' as const, bytes })) },
    // A few multi-megabyte bodies, under and over the 8 MiB body limit.
    {
      weight: 1,
      arbitrary: fc.tuple(fc.integer({ min: 0, max: 19 }), fc.constantFrom('string-field' as const, 'garbage' as const, 'array' as const)).map(([n, shape]): BodyGen =>
        n === 0 ? { kind: 'big', bytes: 5 * 1024 * 1024, shape } : n === 1 ? { kind: 'big', bytes: 9 * 1024 * 1024, shape } : { kind: 'text', text: JSON.stringify({ text: 'x'.repeat(n * 1000) }) },
      ),
    },
  );

const B = 'fuzzBoundary7MA4YWxkTrZu0gW';
/** Multipart bodies from well-formed to garbage: boundaries, parts, truncation, line endings, sizes. */
const multipartCase = fc
  .record({
    boundary: fc.oneof({ weight: 6, arbitrary: fc.constant(B) }, { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(300), '"quoted"', 'a b', '--') }),
    contentType: fc.constantFrom('multipart/form-data; boundary=%B', 'multipart/form-data; boundary=%B', 'multipart/form-data', 'multipart/form-data; boundary="%B"', 'multipart/mixed; boundary=%B', 'multipart/form-data; charset=utf-8; boundary=%B', 'multipart/form-data;boundary=%B;boundary=other', 'application/json', 'text/plain'),
    parts: fc.array(
      fc.record({
        name: fc.oneof(fc.constantFrom('file', 'file', 'other', '__proto__', 'constructor', ''), weird),
        filename: fc.option(fc.oneof(fc.constantFrom('a.wav', '../../etc/passwd', 'x'.repeat(500), 'voice.mp3'), weird), { nil: undefined }),
        partType: fc.option(fc.constantFrom('audio/wav', 'application/json', 'text/plain; charset=utf-8', 'garbage'), { nil: undefined }),
        extraHeader: fc.option(fc.constantFrom('X-Junk: 1', 'no colon here', `X-Long: ${'h'.repeat(20000)}`, 'Content-Disposition: attachment'), { nil: undefined }),
        data: fc.oneof(
          { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 300 }) },
          { weight: 1, arbitrary: fc.constantFrom(`--${B}`, `\r\n--${B}--`, '{"a": 1') },
          { weight: 1, arbitrary: fc.integer({ min: 50_000, max: 2 * UPLOAD_MAX_BYTES }).map((n) => 'R'.repeat(n)) },
        ),
      }),
      { maxLength: 25 },
    ),
    ending: fc.constantFrom('close', 'close', 'close', 'none', 'no-dashes', 'garbage-after'),
    newline: fc.constantFrom('\r\n', '\r\n', '\r\n', '\n'),
    prefix: fc.constantFrom('', '', '', 'preamble text\r\n', '\r\n\r\n'),
    cut: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
  })
  .map(({ boundary, contentType, parts, ending, newline: nl, prefix, cut }) => {
    const body =
      prefix +
      parts
        .map((p) => {
          const disposition = `Content-Disposition: form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`;
          const headers = [disposition, p.partType && `Content-Type: ${p.partType}`, p.extraHeader].filter(Boolean).join(nl);
          return `--${boundary}${nl}${headers}${nl}${nl}${p.data}${nl}`;
        })
        .join('') +
      (ending === 'close' ? `--${boundary}--${nl}` : ending === 'no-dashes' ? `--${boundary}${nl}` : ending === 'garbage-after' ? `--${boundary}--${nl}trailing garbage` : '');
    const text = cut === undefined ? body : body.slice(0, Math.floor(body.length * cut));
    return { contentType: contentType.replace(/%B/g, boundary), body: { kind: 'text' as const, text } };
  });

const apiKeyHeader = (validKey: string): fc.Arbitrary<[string, string][]> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constant<[string, string][]>([['api-key', validKey]]) },
    { weight: 1, arbitrary: fc.constant<[string, string][]>([['api_key', validKey]]) },
    { weight: 2, arbitrary: fc.constant<[string, string][]>([]) },
    { weight: 1, arbitrary: fc.constant<[string, string][]>([['api-key', validKey], ['api_key', 'sk_other']]) },
    { weight: 2, arbitrary: fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('', ' ', 'sk_', 'sk_' + 'f'.repeat(4000), 'null', `${validKey} `, validKey.toUpperCase())).map((k): [string, string][] => [['api-key', k]]) },
  );

const contentTypes = fc.constantFrom(
  'application/json', 'application/json', 'application/json; charset=utf-8', 'application/json; charset=utf-16', 'text/plain',
  'application/x-www-form-urlencoded', 'multipart/form-data', 'multipart/form-data; boundary=x', '*/*', 'application/octet-stream',
  'garbage', ';;;', 'application/json;;', 'text/html', 'application/problem+json', '',
);

/** Header values fetch will send (printable, tab, Latin-1); control characters go through the raw cases. */
const headerValue = fc.oneof(
  fc.string({ unit: 'binary-ascii', maxLength: 80 }).map((s) => s.replace(/[\x00-\x08\x0a-\x1f\x7f]/g, '')),
  fc.constantFrom('\u00ff\u00fe', '\t', ' x ', 'a'.repeat(8000), '=?utf-8?q?x?=', '"unterminated', 'bytes=0-', 'bytes=-1', 'bytes=5-1'),
);
const extraHeaders = fc.array(
  fc.oneof(
    fc.tuple(fc.constantFrom('accept', 'accept-encoding', 'range', 'if-range', 'content-encoding', 'x-forwarded-for', 'accept-version', 'origin', 'cookie', 'authorization', 'x-request-id', 'if-none-match', 'user-agent'), headerValue),
    fc.tuple(fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 20 }).filter((n) => /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(n)), headerValue),
  ),
  { maxLength: 4 },
);

/** Percent-encoded (lone surrogates, which encodeURIComponent refuses, become %EF%BF%BD). */
function safeEncode(s: string): string {
  return encodeURIComponent(s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));
}

/** Concrete path for a route, or a near miss. */
const pathFor = (route: RouteEntry): fc.Arbitrary<string> => {
  let base: fc.Arbitrary<string> = fc.constant(route.url);
  if (route.url.includes(':file')) base = fc.constantFrom('1.svg', '2.svg', '999999.svg', '1.mp3x', 'x.svg', '-1.svg', '%2e%2e%2fetc', '1', 'a'.repeat(150)).map((f) => `/assets/voices/${f}`);
  else if (route.url === '/files/*') base = fc.constantFrom('uploads/x/a.wav', '../../etc/passwd', '%2e%2e/x', 'a//b', 'uploads/%00/x', '').map((k) => `/files/${k}`);
  else if (route.url === '/console/:file') base = fc.constantFrom('app.js', 'tts.js', 'wavesurfer.esm.js', 'x.js', '../package.json', '%2e%2e%2fpackage.json', '..%2f..%2fpackage.json', 'a'.repeat(150), '').map((p) => `/console/${p}`);
  else if (route.url === '/docs/static/*') base = fc.constantFrom('x.js', '../../package.json', '%2e%2e/%2e%2e/package.json', 'index.css', '', '..%2f..%2fpackage.json').map((p) => `/docs/static/${p}`);
  const query = fc.oneof(
    { weight: 4, arbitrary: fc.constant('') },
    { weight: 2, arbitrary: fc.constantFrom('?page=1&page_size=5', '?page=0', '?page_size=100000', '?page=-1', '?page=1e309', '?language=zz', '?gender=9', '?language=en&language=fr', '?page=%ff', '?%', '?exp=1&sig=x', '?a[b]=1', '?__proto__=1') },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 40 }).map((q) => `?${safeEncode(q)}`) },
  );
  const variant = fc.constantFrom('same', 'same', 'same', 'same', 'slash', 'upper', 'extra', 'double-slash', 'encoded');
  return fc.tuple(base, variant, query).map(([p, v, q]) => {
    const path = v === 'slash' ? `${p}/` : v === 'upper' ? p.toUpperCase() : v === 'extra' ? `${p}/extra` : v === 'double-slash' ? p.replace('/', '//') : v === 'encoded' ? p.replace(/a/, '%61') : p;
    return path + q;
  });
};

const methods = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND', 'FOO');

export function fetchCase(validKey: string): fc.Arbitrary<FetchCase> {
  // The upload route (multipart) gets a larger share: its parser is where malformed bodies used to end in 500s.
  const upload = ROUTES.find((r) => r.url === `${API}/files/upload`)!;
  const route = fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...ROUTES) }, { weight: 2, arbitrary: fc.constant(upload) }, { weight: 1, arbitrary: fc.constant(null) });
  return route.chain((r) => {
    // No route: a path that is none of the app's. "", "." and ".." would make "/" (fetch resolves dot segments),
    // the console page, which is a route.
    const path = r ? pathFor(r) : fc.oneof(fc.constantFrom('/audio', `${API}/`, `${API}/tts`, '/nope', '/favicon.ico', '/%', '/%ff%fe', '/..%2f', '/ñ'), weird.filter((w) => !/^\.{0,2}$/.test(w)).map((w) => `/${safeEncode(w)}`));
    const method = r ? fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...r.methods) }, { weight: 1, arbitrary: methods }) : methods;
    if (r?.url === `${API}/files/upload`) {
      return fc.record({ method, path, key: apiKeyHeader(validKey), extra: extraHeaders, mp: fc.oneof({ weight: 6, arbitrary: multipartCase }, { weight: 1, arbitrary: fc.record({ contentType: contentTypes, body: jsonBody(r) }) }) }).map(
        ({ method: m, path: p, key, extra, mp }): FetchCase => ({ via: 'fetch', method: m, path: p, headers: [...key, ['content-type', mp.contentType], ...extra], body: mp.body, route: r }),
      );
    }
    return fc.record({ method, path, key: apiKeyHeader(validKey), ct: fc.option(contentTypes, { nil: undefined }), extra: extraHeaders, body: fc.option(jsonBody(r), { nil: undefined, freq: 5 }) }).map(
      ({ method: m, path: p, key, ct, extra, body }): FetchCase => ({ via: 'fetch', method: m, path: p, headers: [...key, ...(ct === undefined ? [] : [['content-type', ct] as [string, string]]), ...extra], body, route: r }),
    );
  });
}

/** Raw HTTP/1.x messages built from broken pieces: request lines, headers, framing, bodies. */
export function rawCase(validKey: string): fc.Arbitrary<RawCase> {
  const target = fc.oneof(
    fc.constantFrom(...ROUTES.filter((r) => r.answers === 'envelope').map((r) => r.url)),
    fc.constantFrom(`${API}/%ff%fe`, '/%ff%fe', '/assets/voices/%ff', '/%', '/%zz', '*', 'http://127.0.0.1/x', '//', `${API}/tts/task/create?x=%ff`, '/\u00ff\u00fe', '/a b', '/\t', `/${'a'.repeat(20000)}`, `/assets/voices/${'1'.repeat(200)}`, ''),
  );
  const method = fc.constantFrom('GET', 'POST', 'POST', 'PUT', 'DELETE', 'FOO', 'G@T', 'get', '', 'CONNECT', 'TRACE', 'PRI', 'POST POST', 'M'.repeat(100));
  const version = fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.2', 'HTTP/0.9', 'HTTX/1.1', 'HTTP/1.1.1', '');
  const header = fc.oneof(
    fc.constantFrom(
      'Host: 127.0.0.1', 'Host: 127.0.0.1', 'Host:', 'Host: a b', 'Host: 127.0.0.1\r\nHost: other',
      'Content-Length: 2', 'Content-Length: 2\r\nContent-Length: 3', 'Content-Length: 2\r\nContent-Length: 2', 'Content-Length: -1', 'Content-Length: 1x',
      'Content-Length: 99999999999999999999', 'Content-Length: 0x10', 'Content-Length: 2, 2', 'Transfer-Encoding: chunked', 'Transfer-Encoding: gzip',
      'Transfer-Encoding: chunked, identity', 'Transfer-Encoding: chunked\r\nContent-Length: 5', 'Content-Type: application/json', 'Content-Type: multipart/form-data',
      `api-key: ${validKey}`, 'api-key: sk_bad', 'X-Bad\u0001Name: 1', 'X-Bad: a\u0000b', 'X-Bad: a\u007fb', 'X-Latin: \u00e9t\u00e9', 'No colon here', ': empty name',
      'X-Fold: a\r\n folded', 'X-Space : 1', `X-Huge: ${'h'.repeat(20000)}`, 'Expect: 100-continue', 'Expect: nothing', 'Connection: upgrade\r\nUpgrade: h2c', 'Connection: close',
    ),
    fc.string({ unit: 'binary-ascii', maxLength: 60 }),
  );
  const body = fc.oneof(
    fc.constantFrom('', '{}', '{"global_id":"x"}', '{', 'zz\r\n', '5\r\nhello\r\n0\r\n\r\n', '5\r\nhel', 'ffffffffffffffff\r\n', '0\r\n\r\n', '3;ext=' + 'e'.repeat(20000) + '\r\nabc\r\n0\r\n\r\n'),
    fc.string({ unit: 'binary-ascii', maxLength: 200 }),
  );
  const structured = fc
    .record({ method, target, version, headers: fc.array(header, { maxLength: 6 }), body, nl: fc.constantFrom('\r\n', '\r\n', '\r\n', '\n', '\r'), sp: fc.constantFrom(' ', ' ', ' ', '  ', '\t') })
    .map(({ method: m, target: t, version: v, headers, body: b, nl, sp }) => ({ via: 'raw' as const, bytes: `${[m, t, v].join(sp)}${nl}${headers.map((h) => `${h}${nl}`).join('')}${nl}${b}` }));
  const garbage = fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.constantFrom('\r\n\r\n', 'GET', '\u0016\u0003\u0001\u0000\u00a5\u0001', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', `GET / HTTP/1.1\r\n${'X: y\r\n'.repeat(3000)}\r\n`)).map((bytes) => ({ via: 'raw' as const, bytes }));
  return fc.oneof({ weight: 5, arbitrary: structured }, { weight: 1, arbitrary: garbage });
}
