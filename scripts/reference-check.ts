/**
 * Compares Soundry with the reference code on harness case folders (harness/generate.py's output):
 *
 *   node --import tsx scripts/reference-check.ts harness/out [CASE...]
 *
 * Each case folder's case.json names its family; the family's comparison module test/engines/reference/<family>.ts
 * (the one its vitest test uses on the small golden) exports `compareCase(dir)` returning per-output
 * {name, maxAbs, rel}. Prints one row per output and exits non-zero if any output is over the tolerance, a case
 * fails to run, or a case's family has no comparison module. Normally run through `bash harness/check.sh`.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REL_TOLERANCE, readCaseJson, type OutputError } from '../test/engines/reference/golden.js';

const REFERENCE_DIR = resolve(import.meta.dirname, '..', 'test', 'engines', 'reference');

type CompareCase = (dir: string) => Promise<OutputError[]>;

interface Row {
  case: string;
  family: string;
  output: string;
  maxAbs: string;
  rel: string;
  result: string;
  seconds: string;
}

async function comparer(family: string): Promise<CompareCase | string> {
  // The family comes from a generated file: keep it to a plain name before it becomes a path.
  if (!/^[a-z0-9_-]+$/i.test(family)) return `family '${family}' is not a plain name`;
  const path = join(REFERENCE_DIR, `${family}.ts`);
  if (!existsSync(path)) return `no comparison module test/engines/reference/${family}.ts`;
  const mod: unknown = await import(pathToFileURL(path).href);
  const fn = typeof mod === 'object' && mod !== null && 'compareCase' in mod ? mod.compareCase : undefined;
  if (typeof fn !== 'function') return `test/engines/reference/${family}.ts exports no compareCase(dir)`;
  return fn as CompareCase;
}

function table(rows: Row[]): string {
  const cols: (keyof Row)[] = ['case', 'family', 'output', 'maxAbs', 'rel', 'result', 'seconds'];
  const head: Row = { case: 'case', family: 'family', output: 'output', maxAbs: 'max abs', rel: 'rel', result: `rel <= ${REL_TOLERANCE}`, seconds: 's' };
  const width = (k: keyof Row) => Math.max(...[head, ...rows].map((r) => r[k].length));
  const line = (r: Row) => cols.map((k) => r[k].padEnd(width(k))).join('  ');
  return [line(head), cols.map((k) => '-'.repeat(width(k))).join('  '), ...rows.map(line)].join('\n');
}

async function main(): Promise<number> {
  const [rootArg, ...only] = process.argv.slice(2);
  if (!rootArg) {
    console.error('usage: node --import tsx scripts/reference-check.ts <cases folder> [CASE...]');
    return 2;
  }
  const root = resolve(rootArg);
  const names = (await readdir(root, { withFileTypes: true }))
    .filter((d) => d.isDirectory() && existsSync(join(root, d.name, 'case.json')))
    .map((d) => d.name)
    .filter((n) => only.length === 0 || only.includes(n))
    .sort();
  const missing = only.filter((n) => !names.includes(n));
  if (names.length === 0 || missing.length > 0) {
    console.error(`no case folder${missing.length ? ` for ${missing.join(', ')}` : 's'} with a case.json in ${root}`);
    return 2;
  }
  const rows: Row[] = [];
  let failed = 0;
  for (const name of names) {
    const dir = join(root, name);
    const started = performance.now();
    let family = '?';
    try {
      family = (await readCaseJson(dir)).family;
      const compare = await comparer(family);
      if (typeof compare === 'string') throw new Error(compare);
      const errors = await compare(dir);
      if (errors.length === 0) throw new Error('compareCase returned no outputs');
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      for (const e of errors) {
        const ok = e.rel <= REL_TOLERANCE;
        if (!ok) failed++;
        rows.push({ case: name, family, output: e.name, maxAbs: e.maxAbs.toExponential(2), rel: e.rel.toExponential(2), result: ok ? 'pass' : 'FAIL', seconds });
      }
    } catch (err) {
      failed++;
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      rows.push({ case: name, family, output: '-', maxAbs: '-', rel: '-', result: 'ERROR', seconds });
      console.error(`${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
    // Each case's rows as soon as it is done: a full-size case takes minutes, and a crash in a later one must not
    // lose the earlier figures.
    for (const r of rows.filter((x) => x.case === name)) console.error(`${name} ${r.output}: max abs ${r.maxAbs}, rel ${r.rel}, ${r.result} (${r.seconds} s)`);
  }
  console.log(table(rows));
  console.log(failed === 0 ? `\nall ${rows.length} outputs within rel ${REL_TOLERANCE}` : `\n${failed} output(s) or case(s) failed`);
  return failed === 0 ? 0 : 1;
}

process.exitCode = await main();
