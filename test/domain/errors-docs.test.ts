import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/domain/errors.js';

/** Every code the server can answer is documented, and every documented code exists (as Fastify checks its errors against its docs). */
const ROOT = resolve(import.meta.dirname, '../..');
const doc = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
const codesSection = doc.slice(doc.indexOf('\n## Codes'), doc.indexOf('\n## ', doc.indexOf('\n## Codes') + 5));
const rows = [...codesSection.matchAll(/^\| (\d{6}) \| (.+?) \| .+ \|$/gm)].map((m) => ({ code: Number(m[1]), message: m[2]!.replace(/`/g, '') }));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Comments may cite codes (they explain which refusal is meant); code may not. */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('error codes and docs/api.md', () => {
  it('reads the documented tables', () => {
    expect(rows.length).toBeGreaterThanOrEqual(15);
  });

  it('documents every code in the error table with its message', () => {
    for (const [name, { code, message }] of Object.entries(ERRORS)) {
      const row = rows.find((r) => r.code === code);
      expect(row, `${name} (${code}) is missing from docs/api.md`).toBeDefined();
      // Additions document the detailed form ("Invalid parameters: <field>: <problem>"), which starts with the table's text.
      expect(row!.message.startsWith(message), `${code}: docs say "${row!.message}", the table "${message}"`).toBe(true);
    }
  });

  it('documents no code the server cannot answer', () => {
    const known = new Set<number>(Object.values(ERRORS).map((e) => e.code));
    expect(rows.filter((r) => !known.has(r.code))).toEqual([]);
  });

  it('writes codes only through the error table (no stray numeric codes in src)', () => {
    const stray = sources(join(ROOT, 'src'))
      .filter((f) => !f.endsWith(join('domain', 'errors.ts')))
      .flatMap((f) => [...withoutComments(readFileSync(f, 'utf8')).matchAll(/\b10[01][0-9]{3}\b/g)].map((m) => `${f.slice(ROOT.length + 1)}: ${m[0]}`));
    expect(stray).toEqual([]);
  });
});
