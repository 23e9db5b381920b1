/**
 * The full-size RoFormer comparison with its cost figures, for one case folder made by
 * `harness/.venv/bin/python harness/generate.py --size full --case roformer_bs` (or roformer_mel):
 *
 *   node --import tsx test/engines/reference/roformer-full.ts harness/out/roformer_bs [--format ckpt|safetensors]
 *     [--heads name:index,...]   (a multi-instrument case, e.g. roformer_multi: only those heads, named so)
 *
 * Prints max abs / rel per output (as harness/check.sh does), graph build and session create time, seconds for one
 * chunk and for the whole demix, and the process's peak resident memory (VmHWM).
 */
import { readFile } from 'node:fs/promises';
import { REL_TOLERANCE } from './golden.js';
import { compareCase } from './roformer.js';

async function vmHwmMb(): Promise<number> {
  const status = await readFile('/proc/self/status', 'utf8');
  const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
  return kb ? Number(kb) / 1024 : Number.NaN;
}

const [dir, ...rest] = process.argv.slice(2);
const option = (name: string) => {
  const at = rest.indexOf(name);
  return at >= 0 ? rest[at + 1] : undefined;
};
const formatArg = option('--format');
const headsArg = option('--heads');
const heads = headsArg?.split(',').map((h) => {
  const [name, index] = h.split(':');
  return { name: name!, index: Number(index) };
});
if (!dir || (formatArg && formatArg !== 'ckpt' && formatArg !== 'safetensors') || heads?.some((h) => !h.name || !Number.isInteger(h.index))) {
  console.error('usage: node --import tsx test/engines/reference/roformer-full.ts <case folder> [--format ckpt|safetensors] [--heads name:index,...]');
  process.exit(2);
}
const format = formatArg as 'ckpt' | 'safetensors' | undefined;
let figures: Record<string, number> = {};
const results = await compareCase(dir, { ...(format ? { format } : {}), ...(heads ? { heads } : {}), report: (f) => (figures = f) });
for (const r of results) console.log(`${r.rel <= REL_TOLERANCE ? 'ok  ' : 'FAIL'} ${r.name}: max abs ${r.maxAbs.toExponential(3)}, rel ${r.rel.toExponential(3)}`);
console.log(
  `graph build ${(figures.graphMs! / 1000).toFixed(2)} s, session create ${(figures.sessionMs! / 1000).toFixed(2)} s, ` +
    `one chunk ${figures.chunkSeconds!.toFixed(1)} s, demix ${figures.demixSeconds!.toFixed(1)} s for ${figures.chunks} chunks, VmHWM ${(await vmHwmMb()).toFixed(0)} MB`,
);
process.exit(results.every((r) => r.rel <= REL_TOLERANCE) ? 0 : 1);
