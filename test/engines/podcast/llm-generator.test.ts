import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { extractJsonObject, LlmScriptGenerator } from '../../../src/engines/podcast/llm-generator.js';
import type { ScriptRequest } from '../../../src/engines/podcast/script.js';

interface Call {
  body: { model: string; messages: Array<{ role: string; content: string }>; response_format?: { type: string } };
  auth: string | undefined;
}

const GOOD = {
  title: 'Bridges',
  processed_content: 'An episode about bridges.',
  train_data: '1. Intro\n2. Arches\n3. Sign-off',
  podcast_script: [
    { role: 'A', text: 'Welcome, Leo!' },
    { role: 'B', text: 'Hi Maya, arches push outwards.' },
    { role: 'Z', text: 'An invented host.' },
    { role: 'A', text: 'Thanks for listening.' },
  ],
  hightlights: [
    { highlight: 'Arches', index: 0, script_start_index: 1, script_end_index: 2 },
    { highlight: 'Out of range', index: 1, script_start_index: 2, script_end_index: 99 },
  ],
};

let server: Server;
let base: string;
let calls: Call[];
type Reply = { status?: number; content?: string; raw?: string };
let replies: Array<(c: Call) => Reply>;

beforeAll(async () => {
  server = createServer((req, res) => {
    let data = '';
    req.on('data', (d: Buffer) => (data += d.toString()));
    req.on('end', () => {
      const call: Call = { body: JSON.parse(data) as Call['body'], auth: req.headers.authorization };
      calls.push(call);
      const next = replies.shift() ?? ((): Reply => ({ content: JSON.stringify(GOOD) }));
      const r = next(call);
      res.writeHead(r.status ?? 200, { 'content-type': 'application/json' });
      res.end(r.raw ?? JSON.stringify({ choices: [{ message: { role: 'assistant', content: r.content ?? '' } }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  calls = [];
  replies = [];
});

const req = (text: string): ScriptRequest => ({
  source: { title: 'Bridges', text, language: 'en', kind: 'text' },
  sourceData: 'text',
  language: 'en',
  style: 1,
  duration: 2,
  speakers: [
    { role: 'A', name: 'Maya', avatar: 'a.png', voiceId: 'va', gender: 'female' },
    { role: 'B', name: 'Leo', avatar: 'b.png', voiceId: 'vb', gender: 'male' },
  ],
});
const signal = new AbortController().signal;

describe('LlmScriptGenerator', () => {
  it('asks for json_schema and fills voices from the speakers, not the model', async () => {
    const g = new LlmScriptGenerator({ baseUrl: base, model: 'tiny', apiKey: 'k1' });
    const s = await g.generate(req('Arches push their weight outwards.'), signal);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.auth).toBe('Bearer k1');
    expect(calls[0]!.body.response_format?.type).toBe('json_schema');
    expect(s.podcast_script.map((l) => [l.role, l.name, l.voice_id])).toEqual([['A', 'Maya', 'va'], ['B', 'Leo', 'vb'], ['A', 'Maya', 'va'], ['A', 'Maya', 'va']]);
    expect(s.hightlights[1]).toMatchObject({ script_start_index: 2, script_end_index: 3 });
    expect(s.podcast_script_txt.split('\n')[0]).toBe('Bridges');
  });

  it('retries after one malformed answer', async () => {
    replies.push(() => ({ content: 'Sure! Here is your script: {"title": "Bridges", "podcast_script": "oops"}' }));
    const s = await new LlmScriptGenerator({ baseUrl: base, model: 'tiny' }).generate(req('text'), signal);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.body.messages.at(-1)!.content).toMatch(/not valid/);
    expect(s.title).toBe('Bridges');
  });

  it('accepts an answer with an empty line and maps the highlight indices onto the kept lines', async () => {
    const withEmpty = { ...GOOD, podcast_script: [GOOD.podcast_script[0], { role: 'B', text: '' }, ...GOOD.podcast_script.slice(1)], hightlights: [{ highlight: 'Arches', index: 0, script_start_index: 2, script_end_index: 3 }] };
    replies.push(() => ({ content: JSON.stringify(withEmpty) }));
    const s = await new LlmScriptGenerator({ baseUrl: base, model: 'tiny' }).generate(req('text'), signal);
    expect(calls).toHaveLength(1);
    expect(s.podcast_script).toHaveLength(4);
    expect(s.hightlights[0]).toMatchObject({ script_start_index: 1, script_end_index: 2 });
  });

  it('asks again when the lines are not in the episode language', async () => {
    const ja = { ...GOOD, podcast_script: [{ role: 'A', text: 'こんにちは、レオさん。今日は橋の話です。' }, { role: 'B', text: 'アーチは重さを外側に押し出します。' }] };
    replies.push(() => ({ content: JSON.stringify(GOOD) }));
    replies.push(() => ({ content: JSON.stringify(ja) }));
    const s = await new LlmScriptGenerator({ baseUrl: base, model: 'tiny' }).generate({ ...req('text'), language: 'ja' }, signal);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.body.messages.at(-1)!.content).toMatch(/not in Japanese/);
    expect(s.podcast_script[0]!.text).toMatch(/こんにちは/);
  });

  it('fails after three malformed answers', async () => {
    for (let i = 0; i < 3; i++) replies.push(() => ({ content: 'not json at all' }));
    await expect(new LlmScriptGenerator({ baseUrl: base, model: 'tiny' }).generate(req('text'), signal)).rejects.toThrow(/malformed/);
    expect(calls).toHaveLength(3);
  });

  it('falls back to json_object, then plain text with extraction, when formats are rejected', async () => {
    replies.push(() => ({ status: 400, raw: '{"error":{"message":"response_format json_schema is not supported"}}' }));
    replies.push(() => ({ status: 400, raw: '{"error":{"message":"response_format json_object is not supported"}}' }));
    replies.push(() => ({ content: `Here you go:\n\`\`\`json\n${JSON.stringify(GOOD)}\n\`\`\`` }));
    const s = await new LlmScriptGenerator({ baseUrl: base, model: 'tiny' }).generate(req('text'), signal);
    expect(calls.map((c) => c.body.response_format?.type ?? 'none')).toEqual(['json_schema', 'json_object', 'none']);
    expect(s.podcast_script.length).toBe(4);
  });

  it('summarises a long source in chunks before writing (map-reduce)', async () => {
    const para = 'Stone arches carry loads by compression and have stood for two thousand years. ';
    const long = Array.from({ length: 30 }, (_, i) => `${para.repeat(5)}Section ${i}.`).join('\n\n');
    for (let i = 0; i < 5; i++) replies.push((c) => ({ content: `- summary of ${c.body.messages[1]!.content.slice(0, 12)}` }));
    const g = new LlmScriptGenerator({ baseUrl: base, model: 'tiny', chunkChars: 3000 });
    await g.generate(req(long), signal);
    const mapCalls = calls.filter((c) => c.body.messages[1]!.content.startsWith('Part '));
    expect(mapCalls.length).toBeGreaterThanOrEqual(4);
    const final = calls.at(-1)!;
    expect(final.body.response_format?.type).toBe('json_schema');
    expect(final.body.messages[1]!.content).toContain('Part 1:');
    expect(final.body.messages[1]!.content.length).toBeLessThan(long.length);
  });

  it('extractJsonObject finds JSON in prose and fences', () => {
    expect(extractJsonObject('x {"a":1} y')).toEqual({ a: 1 });
    expect(extractJsonObject('```json\n{"b":2}\n```')).toEqual({ b: 2 });
    expect(() => extractJsonObject('nothing')).toThrow();
  });
});
