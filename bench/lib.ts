import { spawn, type ChildProcess } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile, mkdir } from 'node:fs/promises';

export const root = new URL('..', import.meta.url).pathname;

export function machine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  return `${cpus().length} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}`;
}

export function startNode(args: string[], env: Record<string, string>, cwd: string = root): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
}

export async function waitHttp(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url, { method: 'GET' });
      if (res.status < 500) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`${url} did not come up`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function writeResult(name: string, markdown: string): Promise<string> {
  const dir = `${root}bench/results`;
  await mkdir(dir, { recursive: true });
  const path = `${dir}/${name}.md`;
  await writeFile(path, markdown);
  return path;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2 : NaN;
}

/**
 * This process's peak RSS in MB (VmHWM): unlike getrusage's maxRSS, which a spawned child inherits from the parent it
 * was forked from (a bench parent that built hundreds of MB of stand-ins), the high-water mark belongs to the address
 * space exec made.
 */
export function peakRssMb(): number {
  const kb = /VmHWM:\s*(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  if (!kb) throw new Error('no VmHWM in /proc/self/status');
  return Number(kb) / 1024;
}

/** The sections of bench/results/neural-cost.md after the separation part, each written by its own bench. */
export const NEURAL_COST_SECTIONS = ['## TTS:', '## ASR:'] as const;

/**
 * Rewrites one bench's section of a results file that several benches share, keeping the others: a section runs from
 * the line that starts with its heading to the next such line; `section` null is the part before the first heading.
 */
export async function writeSection(name: string, headings: readonly string[], section: string | null, markdown: string): Promise<string> {
  const path = `${root}bench/results/${name}.md`;
  const parts = new Map<string | null, string[]>();
  let current: string | null = null;
  for (const line of existsSync(path) ? readFileSync(path, 'utf8').split('\n') : []) {
    const h = headings.find((x) => line.startsWith(x));
    if (h) current = h;
    const lines = parts.get(current) ?? [];
    lines.push(line);
    parts.set(current, lines);
  }
  parts.set(section, [markdown]);
  const text = [null, ...headings].map((h) => parts.get(h)?.join('\n').trim()).filter((t) => t).join('\n\n');
  return writeResult(name, `${text}\n`);
}

/**
 * CPU seconds (user + system) a process has used, from /proc (Linux): on a shared machine the clock-time
 * figures swing with others' load; the work one request costs barely does.
 */
export function processCpuSeconds(pid: number): number {
  return cpuSecondsOf(`/proc/${pid}/stat`);
}

/**
 * CPU of a process's main thread alone (its event loop), without its engine, checkpoint or libuv threads: on a
 * ROLE=all server the process's CPU per request also holds the synthesis of the tasks a create load makes.
 */
export function mainThreadCpuSeconds(pid: number): number {
  return cpuSecondsOf(`/proc/${pid}/task/${pid}/stat`);
}

function cpuSecondsOf(statPath: string): number {
  const stat = readFileSync(statPath, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}
