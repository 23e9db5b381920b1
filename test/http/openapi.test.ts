import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/domain/errors.js';
import { EMOTION_NAMES, MODEL_TYPES, PODCAST_LANGUAGES, TTS_LANGUAGES } from '../../src/domain/vocabulary.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * The OpenAPI document: linted with Redocly's `recommended` ruleset (@redocly/openapi-core, the engine of
 * @redocly/cli), no error and no warning, and checked for what a client generator relies on.
 */
let app: TestApp;
let doc: any;
const API = '/audio/api/v1/api-keys';
const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'];

beforeAll(async () => {
  app = await startTestApp({}, { workers: false });
  const res = await fetch(`${app.baseUrl}/openapi.json`);
  expect(res.status).toBe(200);
  doc = await res.json();
});
afterAll(async () => app?.close());

const operations = () =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).filter(([m]) => METHODS.includes(m)).map(([method, op]) => ({ path, method, op })),
  );
const bodyOf = (path: string) => doc.paths[path].post.requestBody.content['application/json'].schema;
const dataOf = (path: string, method = 'post') => doc.paths[path][method].responses['200'].content['application/json'].schema.properties.data;

/** Follows a local $ref; fails on one that points nowhere. */
function resolveRefs(node: unknown, seen: string[] = []): void {
  if (Array.isArray(node)) return node.forEach((n) => resolveRefs(n, seen));
  if (!node || typeof node !== 'object') return;
  for (const [k, v] of Object.entries(node)) {
    if (k === '$ref') {
      expect(typeof v === 'string' && v.startsWith('#/'), `non-local $ref ${String(v)}`).toBe(true);
      const target = (v as string).slice(2).split('/').reduce<any>((o, part) => o?.[part], doc);
      expect(target, `dangling $ref ${String(v)}`).toBeDefined();
    } else resolveRefs(v, seen);
  }
}

describe('OpenAPI document', () => {
  it("lints clean with Redocly's recommended ruleset: no errors, no warnings", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it('is an OpenAPI 3 document whose operations each have a unique operationId, a response and declared path parameters', () => {
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.title).toBeTruthy();
    expect(doc.info.version).toBeTruthy();
    expect(doc.servers?.[0]?.url).toMatch(/^http/);
    const ops = operations();
    expect(ops.length).toBeGreaterThanOrEqual(15);
    const ids = ops.map((o) => o.op.operationId);
    for (const o of ops) expect(o.op.operationId, `${o.method} ${o.path}`).toMatch(/^[a-z][A-Za-z0-9]*$/);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, method, op } of ops) {
      expect(Object.keys(op.responses ?? {}).length, `${method} ${path} has no response`).toBeGreaterThan(0);
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const declared = (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name);
      expect(declared.sort(), `${method} ${path}`).toEqual(templated.sort());
    }
    resolveRefs(doc);
  });

  it('names the spec operations as a client generator would call them', () => {
    const byId = Object.fromEntries(operations().map((o) => [o.op.operationId, `${o.method.toUpperCase()} ${o.path}`]));
    expect(byId).toMatchObject({
      createTtsTask: `POST ${API}/tts/task/create`,
      getTtsTask: `POST ${API}/tts/task/get`,
      createSeparationTask: `POST ${API}/separation/task/create`,
      getSeparationTask: `POST ${API}/separation/task/get`,
      createEnhanceTask: `POST ${API}/enhance/task/create`,
      getEnhanceTask: `POST ${API}/enhance/task/get`,
      createPodcastScript: `POST ${API}/podcast/script/create`,
      getPodcastScript: `POST ${API}/podcast/script/get`,
      createPodcastAudio: `POST ${API}/podcast/audio/create`,
      getPodcastAudio: `POST ${API}/podcast/audio/get`,
      listTtsVoices: `GET ${API}/tts/voices`,
      uploadFile: `POST ${API}/files/upload`,
    });
  });

  it('lists the enums of model_type, emotion, style, duration, source_type and the languages', () => {
    expect(bodyOf(`${API}/separation/task/create`).properties.model_type.enum).toEqual([...MODEL_TYPES]);
    const tts = bodyOf(`${API}/tts/task/create`).properties;
    expect(tts.emotion.enum).toEqual(EMOTION_NAMES.map((_, i) => i));
    expect(tts.language.enum).toEqual(['all', ...TTS_LANGUAGES]);
    const podcast = bodyOf(`${API}/podcast/script/create`).properties;
    expect(podcast.style.enum).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(podcast.duration.enum).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(podcast.source_type.enum).toEqual([1, 2, 3, 4]);
    expect(podcast.language.enum).toEqual([...PODCAST_LANGUAGES]);
  });

  it('has a request example per task operation that the route itself accepts', () => {
    const kinds = app.container.httpDeps().kinds;
    expect(kinds).toHaveLength(5);
    for (const { route } of kinds) {
      const example = bodyOf(`${API}/${route.create}`).example;
      expect(example, route.create).toEqual(route.example);
      const parsed = route.body.safeParse(example);
      expect(parsed.success, `${route.create}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      // The query's example is accepted too (either id name; the documented one is used).
      expect(Object.keys(bodyOf(`${API}/${route.get}`).example)).toEqual([route.queryIdField]);
    }
  });

  it('types data per operation and lists the envelope codes', () => {
    expect(dataOf(`${API}/tts/task/create`).required).toEqual(['job_id']);
    expect(dataOf(`${API}/podcast/script/create`).required).toEqual(['global_id']);
    expect(dataOf(`${API}/enhance/task/create`).properties.model.enum ?? [dataOf(`${API}/enhance/task/create`).properties.model.const]).toEqual([2]);
    const separation = dataOf(`${API}/separation/task/get`);
    expect(separation.properties.status.enum).toEqual(['waiting', 'success', 'failed']);
    expect(Object.keys(separation.properties)).toEqual(expect.arrayContaining(['file_type', 'video_url', 'output', 'zip_url']));
    expect(Object.keys(dataOf(`${API}/podcast/audio/get`).properties)).toEqual(expect.arrayContaining(['file_url', 'podcast_script', 'hightlights', 'title']));
    const queryCodes = doc.paths[`${API}/tts/task/get`].post.responses['200'].content['application/json'].schema.properties.code.enum;
    expect(queryCodes).toEqual(expect.arrayContaining([100000, 100100, 101002, 101003, 101004, 101008]));
    expect(doc.paths[`${API}/tts/task/create`].post.description).toContain('101006 (API key not enabled)');
    expect(doc.components.schemas.ErrorCode.enum.sort()).toEqual(Object.values(ERRORS).map((e) => e.code).sort());
  });

  it('serves the docs page, which no other site may frame (found from outside: it had neither header)', async () => {
    for (const path of ['/docs', '/docs/static/index.html']) {
      const res = await fetch(`${app.baseUrl}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-security-policy'), path).toBe("frame-ancestors 'none'");
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
      await res.arrayBuffer();
    }
  });
});
