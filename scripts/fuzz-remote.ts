/**
 * The suite's fuzz (test/http/fuzz.test.ts: malformed requests over every route, through fetch and as raw TCP)
 * sent to a Soundry that is already running, as an outside client attacks it: the real `npm start`, its own
 * configuration and logging, rather than the suite's in-process server. Every answer must be an envelope where
 * one is due, none a 5xx; the server must still answer /healthz at the end. With --pid (the server's process on
 * this machine) its RSS is sampled every 1,000 requests (no GC is forced from outside: garbage counts too).
 *
 *   DATA_DIR=... npm run cli -- keys create --credits 0 --rate-limit 1000000 --concurrency 1000   # creates never become tasks
 *   node --import tsx scripts/fuzz-remote.ts --url http://127.0.0.1:8080 --key sk_... [--runs 20000] [--seed 1] [--pid 1234]
 *
 * Exits 1 when an answer is wrong or the server stopped answering. Send it only to a server you run.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { describeTally, runFuzz } from '../test/helpers/fuzz-run.js';

const program = new Command()
  .requiredOption('--url <url>', 'the server, e.g. http://127.0.0.1:8080')
  .requiredOption('--key <key>', 'a valid API key (create it with --credits 0)')
  .option('--runs <n>', 'requests to send', '20000')
  .option('--seed <n>', 'the seed; the same seed sends the same requests', String(Date.now() % 2 ** 31))
  .option('--concurrency <n>', 'requests in flight', '8')
  .option('--minutes <n>', 'stop sending after this long', '30')
  .option('--pid <pid>', "the server's process id, to sample its RSS")
  .parse();
const opts = program.opts<{ url: string; key: string; runs: string; seed: string; concurrency: string; minutes: string; pid?: string }>();

/** Resident memory of a process of this machine, in MB (Linux /proc). */
function rssMb(pid: string): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kb ? Math.round(Number(kb) / 1024) : null;
  } catch {
    return null;
  }
}

const baseUrl = opts.url.replace(/\/+$/, '');
const seed = Number(opts.seed);
const samples: string[] = [];
const rssAtStart = opts.pid ? rssMb(opts.pid) : null;
console.log(`fuzzing ${baseUrl}: ${opts.runs} requests, seed ${seed} (--seed ${seed} sends the same ones again)`);
const tally = await runFuzz(
  { baseUrl, validKey: opts.key },
  {
    seed,
    runs: Number(opts.runs),
    timeBoundMs: Number(opts.minutes) * 60_000,
    concurrency: Number(opts.concurrency),
    after: (i) => {
      if ((i + 1) % 1000 !== 0) return;
      const rss = opts.pid ? rssMb(opts.pid) : null;
      samples.push(rss === null ? `${i + 1}` : `${i + 1}: ${rss} MB`);
      process.stdout.write(`  ${samples.at(-1)}\n`);
    },
  },
);
let alive = false;
try {
  alive = (await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(10_000) })).status < 500;
} catch {
  alive = false;
}
console.log(`${describeTally(tally)}`);
if (opts.pid) console.log(`server RSS ${rssAtStart ?? '?'} MB at the start -> ${rssMb(opts.pid) ?? 'gone'} MB at the end`);
console.log(`/healthz at the end: ${alive ? 'answering' : 'NOT answering'}`);
if (tally.failed > 0) console.log(`${tally.failed} bad answers; the first ${tally.failures.length}:\n${tally.failures.join('\n')}`);
process.exit(tally.failed > 0 || !alive ? 1 : 0);
