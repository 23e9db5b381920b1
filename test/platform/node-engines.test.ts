import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * package.json "engines" must be honest: the lowest Node it admits has to run every installed
 * dependency. Several of ours are ESM-only packages loaded with require() from CommonJS
 * (@fastify/static -> content-disposition@3, light-my-request -> cookie@2), which needs require(esm):
 * unflagged from Node 20.19.0 and 22.12.0. That, and vite/rolldown/css-select declaring
 * ^20.19.0 || >=22.12.0, is why 20.18 was a false claim.
 */
const require = createRequire(import.meta.url);
const semver = require('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

/**
 * Packages whose declared engines exclude our lowest Node although they run on it: the jshttp
 * packages declare ">=22" as a support policy. Each is exercised below on the running Node.
 */
const POLICY_ONLY: Record<string, () => void> = {
  'content-disposition': () => {
    const cd = require('content-disposition') as { create(name: string): string };
    expect(cd.create('résumé.mp3')).toContain("filename*=UTF-8''r%C3%A9sum%C3%A9.mp3");
  },
  cookie: () => {
    const ck = require('cookie') as { stringifySetCookie(c: { name: string; value: string }): string };
    expect(ck.stringifySetCookie({ name: 'a', value: 'b c' })).toBe('a=b%20c');
  },
};

function* installedPackages(dir: string): Generator<{ name: string; version: string; node?: string }> {
  for (const entry of readdirSync(dir)) {
    if (entry.startsWith('.')) continue;
    const full = join(dir, entry);
    if (entry.startsWith('@')) {
      yield* installedPackages(full);
      continue;
    }
    const manifest = join(full, 'package.json');
    if (existsSync(manifest)) {
      try {
        const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string; engines?: { node?: string } };
        if (pkg.name) yield { name: pkg.name, version: pkg.version ?? '?', node: pkg.engines?.node };
      } catch {
        // not a package manifest we can read (fixtures inside packages): skip
      }
    }
    const nested = join(full, 'node_modules');
    if (existsSync(nested)) yield* installedPackages(nested);
  }
}

describe('package.json engines', () => {
  const ours = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as { engines: { node: string } };
  const lowest = semver.minVersion(ours.engines.node)!.version;

  it('admits no Node that lacks require(esm), which our dependency tree needs', () => {
    expect(semver.satisfies('20.18.3', ours.engines.node)).toBe(false);
    expect(semver.satisfies('22.11.0', ours.engines.node)).toBe(false);
    expect(semver.satisfies(lowest, '^20.19.0 || >=22.12.0')).toBe(true);
    expect(process.features.require_module).toBe(true);
  });

  it('every installed dependency accepts the lowest Node we claim, or is known to run on it', () => {
    const offenders: string[] = [];
    for (const pkg of installedPackages(join(process.cwd(), 'node_modules'))) {
      if (!pkg.node || semver.satisfies(lowest, pkg.node)) continue;
      if (pkg.name in POLICY_ONLY) continue;
      offenders.push(`${pkg.name}@${pkg.version} wants node ${pkg.node}`);
    }
    expect(offenders).toEqual([]);
  });

  it('the policy-only packages load through require(esm) and work here', () => {
    for (const check of Object.values(POLICY_ONLY)) check();
    expect(() => require('@fastify/static')).not.toThrow();
    expect(() => require('light-my-request')).not.toThrow();
  });
});
