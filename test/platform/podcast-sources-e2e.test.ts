import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const API = '/audio/api/v1/api-keys';

/** A one-page PDF with real text objects and a correct xref table, written by hand. */
function tinyPdf(lines: string[]): Buffer {
  const content = `BT /F1 12 Tf 72 720 Td 16 TL ${lines.map((l) => `(${l.replace(/[()\\]/g, '')}) Tj T*`).join(' ')} ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

const FACTS = [
  'Lighthouses guided ships along dangerous coasts for centuries.',
  'The first lighthouse keepers burned wood and coal in open fires.',
  'Fresnel lenses later focused the light into beams visible for miles.',
  'Today most lighthouses are automated and powered by solar panels.',
  'Some old towers have become museums that visitors can climb.',
];

let server: Server;
let base: string;
const llmCalls: unknown[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = req.url ?? '';
    if (url === '/watch') {
      const player = { videoDetails: { title: 'Lighthouses explained' }, captions: { playerCaptionsTracklistRenderer: { captionTracks: [{ baseUrl: `${base}/timedtext?lang=en`, languageCode: 'en' }] } } };
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><head><title>Lighthouses explained - Video</title></head><body><script>var ytInitialPlayerResponse = ${JSON.stringify(player)};</script></body></html>`);
    } else if (url.startsWith('/timedtext')) {
      res.end(`<?xml version="1.0"?><transcript>${FACTS.map((f, i) => `<text start="${i * 4}" dur="4">${f}</text>`).join('')}</transcript>`);
    } else if (url === '/notes.pdf') {
      res.writeHead(200, { 'content-type': 'application/pdf' }).end(tinyPdf(FACTS));
    } else if (url === '/notes.md') {
      res.writeHead(200, { 'content-type': 'text/markdown' }).end(`# Lighthouses\n\n${FACTS.join(' ')}\n`);
    } else if (url === '/live.m3u8') {
      // An HLS playlist, as a CDN serves it: segments are other URLs (served here too, so only refusal can stop it).
      res.writeHead(200, { 'content-type': 'application/vnd.apple.mpegurl' }).end(`#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\n${base}/notes.md\n#EXT-X-ENDLIST\n`);
    } else if (url === '/radio') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`[playlist]\nFile1=${base}/notes.md\nTitle1=${FACTS[0]}\nNumberOfEntries=1\nVersion=2\n`);
    } else if (url === '/v1/chat/completions' && req.method === 'POST') {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        llmCalls.push(JSON.parse(body));
        const script = {
          title: 'Lighthouses, by the model',
          processed_content: 'Two hosts talk about lighthouses.',
          train_data: '1. History\n2. Lenses\n3. Today',
          podcast_script: [
            { role: 'A', text: 'Welcome! Today: lighthouses.' },
            { role: 'B', text: 'Keepers once burned wood and coal.' },
            { role: 'A', text: 'And Fresnel lenses changed everything.' },
            { role: 'B', text: 'Now the sun powers them. Thanks for listening!' },
          ],
          hightlights: [{ highlight: 'Fresnel lenses', index: 0, script_start_index: 2, script_end_index: 2 }],
        };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: JSON.stringify(script) } }] }));
      });
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => server?.close());

async function scriptTask(app: TestApp, body: Record<string, unknown>) {
  const { key } = await app.newKey({ credits: 100 });
  const created = await app.post(`${API}/podcast/script/create`, { duration: 1, language: 'en', ...body }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  return app.waitTask(`${API}/podcast/script/get`, 'global_id', created.json.data.global_id, key, 120_000);
}

describe('podcast sources through the API', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ ALLOW_PRIVATE_URLS: '1' });
  });
  afterAll(async () => app?.close());

  it('source_type 2 reads the captions a video page publishes', async () => {
    const s = await scriptTask(app, { source_type: 2, url: `${base}/watch` });
    expect(s.data.status, JSON.stringify(s)).toBe('success');
    expect(s.data.title).toMatch(/Lighthouses/);
    expect(s.data.podcast_script_txt).toMatch(/lighthouse|Fresnel|keepers/i);
  });

  it('a playlist (HLS, PLS) as a website, video link or attachment fails saying so, never becomes an episode', async () => {
    for (const [source_type, path, format] of [[1, 'live.m3u8', 'HLS'], [2, 'live.m3u8', 'HLS'], [3, 'live.m3u8', 'HLS'], [3, 'radio', 'PLS']] as const) {
      const s = await scriptTask(app, { source_type, url: `${base}/${path}` });
      expect(s.data.status, `${source_type} ${path}: ${JSON.stringify(s)}`).toBe('failed');
      expect(s.data.error).toBe(
        `The source is a playlist (${format}): a list of other files or streams, which is not read. Give a page, a document or a media file`,
      );
      expect(s.data.title).toBe('');
    }
    // Pasted (source_type 4): found from outside, a pasted playlist became an episode titled "#EXTM3U".
    for (const [text, format] of [
      ['#EXTM3U\n#EXTINF:7,Track\n/music/bass.flac\n', 'M3U'],
      ['\ufeff\r\n\r\n#extm3u\r\n#EXT-X-VERSION:3\r\nseg0.ts\r\n', 'HLS'],
      ["ffconcat version 1.0\nfile 'a.wav'\n", 'FFCONCAT'],
    ] as const) {
      const s = await scriptTask(app, { source_type: 4, text });
      expect(s.data.status, `${JSON.stringify(text)}: ${JSON.stringify(s)}`).toBe('failed');
      expect(s.data.error).toBe(`The source is a playlist (${format}): a list of other files or streams, which is not read. Give a page, a document or a media file`);
    }
  });

  it('source_type 3 reads attachments: PDF and Markdown', async () => {
    for (const file of ['notes.pdf', 'notes.md']) {
      const s = await scriptTask(app, { source_type: 3, url: `${base}/${file}` });
      expect(s.data.status, `${file}: ${JSON.stringify(s)}`).toBe('success');
      expect(s.data.podcast_script_txt, file).toMatch(/Fresnel|keepers|museums|solar/);
    }
  });
});

describe('the LLM script engine through the API', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ ALLOW_PRIVATE_URLS: '1', LLM_BASE_URL: `${base}/v1`, LLM_MODEL: 'tiny-test' });
  });
  afterAll(async () => app?.close());

  it('uses the configured OpenAI-compatible endpoint and fills voices from the speakers', async () => {
    const s = await scriptTask(app, { source_type: 4, text: FACTS.join(' ') });
    expect(s.data.status, JSON.stringify(s)).toBe('success');
    expect(s.data.engine).toBe('llm:tiny-test');
    expect(s.data.title).toBe('Lighthouses, by the model');
    expect(llmCalls.length).toBeGreaterThan(0);
    const voices = new Set(s.data.podcast_script.map((l: any) => l.voice_id));
    expect(voices.size).toBe(2);
    for (const v of voices) expect(v).toMatch(/^\d+$/);
  });
});

describe('an LLM endpoint that never answers', () => {
  let app: TestApp;
  beforeAll(async () => {
    // Port 9 (discard) on loopback: connection refused, a transient failure on every attempt.
    app = await startTestApp({ ALLOW_PRIVATE_URLS: '1', LLM_BASE_URL: 'http://127.0.0.1:9/v1', LLM_MODEL: 'gone', MAX_ATTEMPTS: '2' });
  });
  afterAll(async () => app?.close());

  it('fails the script task saying so, not with a generic internal error', async () => {
    const s = await scriptTask(app, { source_type: 4, text: FACTS.join(' ') });
    expect(s.data.status).toBe('failed');
    expect(s.data.error).toMatch(/language model service could not be reached/);
  }, 30_000);
});
