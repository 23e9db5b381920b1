import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Dependencies point inwards: http -> services/kinds -> ports <- adapters, the worker side never
 * imports the API side, and only the composition roots (src/app, src/main.ts, src/cli) build adapters.
 * Each rule names the folders a layer must not import from; a new import that breaks one fails here.
 */
const SRC = resolve(import.meta.dirname, '../../src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** src-relative paths this file imports (relative specifiers only; packages are not layers). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g)].map((m) => m[1] ?? m[2]!);
  return specs.map((s) => relative(SRC, resolve(dirname(file), s)).replace(/\.js$/, '.ts'));
}

const all = files(SRC).map((f) => ({ file: relative(SRC, f), imports: importsOf(f) }));

const isUnder = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);
const workerSide = (f: string) => /^kinds\/[^/]+\/(worker|thread|asr-thread)\.ts$/.test(f) || isUnder(f, 'jobs');
const apiSide = (f: string) => /^kinds\/[^/]+\/api\.ts$/.test(f) || isUnder(f, 'services') || isUnder(f, 'http');

const RULES: Array<{ name: string; from: (f: string) => boolean; banned: (imported: string) => boolean }> = [
  { name: 'domain imports nothing outside domain', from: (f) => isUnder(f, 'domain'), banned: (i) => !isUnder(i, 'domain') },
  { name: 'ports import only domain', from: (f) => isUnder(f, 'ports'), banned: (i) => !isUnder(i, 'domain') && !isUnder(i, 'ports') },
  { name: 'config imports only domain', from: (f) => isUnder(f, 'config'), banned: (i) => !isUnder(i, 'domain') },
  { name: 'the worker side never imports the API side', from: workerSide, banned: apiSide },
  {
    name: 'engines and media know no task, service, transport or adapter',
    from: (f) => isUnder(f, 'engines') || isUnder(f, 'media'),
    banned: (i) => ['kinds', 'jobs', 'services', 'http', 'adapters', 'app', 'config', 'cli'].some((l) => isUnder(i, l)),
  },
  {
    name: 'kinds, services and jobs never reach into http, adapters or composition roots',
    from: (f) => isUnder(f, 'kinds') || isUnder(f, 'services') || isUnder(f, 'jobs'),
    banned: (i) => ['http', 'adapters', 'app', 'cli', 'main.ts'].some((l) => isUnder(i, l)),
  },
  { name: 'adapters depend on ports and domain, not on use cases', from: (f) => isUnder(f, 'adapters'), banned: (i) => ['http', 'services', 'kinds', 'jobs', 'app', 'engines'].some((l) => isUnder(i, l)) },
  {
    // The SDK runs on the client's machine: it may share the contracts' zod schemas and the vocabulary, nothing of the server.
    name: 'the sdk imports only its own files, domain and the kinds\' contracts',
    from: (f) => isUnder(f, 'sdk'),
    banned: (i) => !isUnder(i, 'sdk') && !isUnder(i, 'domain') && !/^kinds\/([^/]+\/contract|fields)\.ts$/.test(i),
  },
  { name: 'http never builds adapters', from: (f) => isUnder(f, 'http'), banned: (i) => isUnder(i, 'adapters') || isUnder(i, 'app') },
];

/**
 * Known breaks still to be removed (none today). Each entry must still exist: one that no longer breaks a
 * rule fails the last test, so the list can only shrink.
 */
const KNOWN = new Set<string>([]);
const seen = new Set<string>();

describe('dependency directions', () => {
  it('finds the source tree', () => {
    expect(all.length).toBeGreaterThan(100);
    expect(all.some((f) => f.file === 'kinds/registry.ts')).toBe(true);
  });
  for (const rule of RULES) {
    it(rule.name, () => {
      const broken = all.flatMap(({ file, imports }) => (rule.from(file) ? imports.filter(rule.banned).map((i) => `${file} -> ${i}`) : []));
      for (const b of broken) if (KNOWN.has(b)) seen.add(b);
      expect(broken.filter((b) => !KNOWN.has(b))).toEqual([]);
    });
  }
  it('lists only known breaks that still exist', () => {
    expect([...KNOWN].filter((k) => !seen.has(k))).toEqual([]);
  });
});
