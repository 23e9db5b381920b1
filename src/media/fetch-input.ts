import { createWriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import ipaddr from 'ipaddr.js';
import { sniffMediaType, type SniffedType } from './sniff.js';
import { isDiskFull } from '../domain/errors.js';

/**
 * Downloads a user-supplied input URL to a local file, defending against SSRF:
 * we resolve DNS ourselves, refuse non-public addresses, and pin the connection to the
 * address we checked so a second (rebinding) DNS answer can never be used.
 */

export type FetchInputReason =
  | 'scheme' | 'blocked_address' | 'too_large' | 'timeout' | 'stalled' | 'http_status' | 'dns' | 'redirects' | 'network';

/** Message is safe to show to the API caller: no stack, no resolved IPs. */
export class FetchInputError extends Error {
  override readonly name = 'FetchInputError';
  constructor(
    readonly reason: FetchInputReason,
    message: string,
  ) {
    super(message);
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (tests inject a fake one). */
export type LookupFn = (hostname: string) => Promise<ResolvedAddress[]>;

export interface FetchInputOptions {
  allowPrivate: boolean;
  maxBytes: number;
  timeoutMs: number;
  /**
   * Floor of the download's pace: fewer than this many bytes per second over a window (`rateWindowMs`, default 30 s),
   * headers included, fails it as 'stalled'. 0 or unset: only timeoutMs bounds it. A server trickling a byte a
   * second held a worker's slot for the whole timeout, on each attempt, delaying every other key's tasks.
   */
  minBytesPerSecond?: number;
  rateWindowMs?: number;
  /** Default 5. */
  maxRedirects?: number;
  signal?: AbortSignal;
  lookup?: LookupFn;
  /**
   * Test seam only: where to really connect for an address that passed the check, so tests can
   * make a "public" address land on a 127.0.0.1 server. Never set this in production code.
   */
  testOnlyConnectTo?: (checked: ResolvedAddress) => ResolvedAddress;
}

export interface FetchResult {
  bytes: number;
  /** As the server claimed it; informational only, use `sniffed`. */
  contentType: string | null;
  sniffed: SniffedType;
  finalUrl: string;
}

const SNIFF_BYTES = 4096;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
// Cloud metadata endpoints are never a legitimate media source, so they stay blocked even with allowPrivate.
const METADATA_ADDRESSES = ['169.254.169.254', 'fd00:ec2::254', '100.100.100.200'].map((a) => ipaddr.parse(a));
const GLOBAL_UNICAST_V6: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('2000::'), 3];

const defaultLookup: LookupFn = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export async function fetchToFile(url: string, destPath: string, opts: FetchInputOptions): Promise<FetchResult> {
  const maxRedirects = opts.maxRedirects ?? 5;
  let current = parseTarget(url);
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, opts.timeoutMs);
  let received = 0;
  let stalled = false;
  const windowMs = opts.rateWindowMs ?? 30_000;
  const floor = ((opts.minBytesPerSecond ?? 0) * windowMs) / 1000;
  let seen = 0;
  const watch = floor > 0
    ? setInterval(() => {
      if (received - seen < floor) {
        stalled = true;
        controller.abort();
      }
      seen = received;
    }, windowMs)
    : null;
  const onOuterAbort = () => controller.abort();
  if (opts.signal?.aborted) controller.abort();
  else opts.signal?.addEventListener('abort', onOuterAbort, { once: true });

  let fileCreated = false;
  try {
    for (let hop = 0; ; hop++) {
      const pinned = await resolveAndCheck(current, opts, controller.signal);
      const res = await sendRequest(current, pinned, controller.signal);
      const status = res.statusCode ?? 0;
      if (REDIRECT_STATUSES.has(status) && res.headers.location) {
        res.destroy();
        if (hop >= maxRedirects) throw new FetchInputError('redirects', `Too many redirects (more than ${maxRedirects})`);
        current = parseTarget(resolveLocation(res.headers.location, current));
        continue;
      }
      if (status < 200 || status > 299) {
        res.destroy();
        throw new FetchInputError('http_status', `The remote server answered with HTTP status ${status}`);
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > opts.maxBytes) {
        res.destroy();
        throw tooLarge(opts.maxBytes);
      }
      fileCreated = true;
      const { bytes, head } = await streamToFile(res, destPath, opts.maxBytes, controller.signal, (n) => (received += n));
      return {
        bytes,
        contentType: res.headers['content-type'] ?? null,
        sniffed: sniffMediaType(head),
        finalUrl: current.href,
      };
    }
  } catch (err) {
    if (fileCreated) await unlink(destPath).catch(() => undefined);
    // Our disk, not the download: the task fails for that reason instead of a "network" one that is retried.
    if (isDiskFull(err)) throw err;
    throw toFetchError(err, current, timedOut, opts, stalled);
  } finally {
    clearTimeout(timer);
    if (watch) clearInterval(watch);
    opts.signal?.removeEventListener('abort', onOuterAbort);
  }
}

function parseTarget(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new FetchInputError('scheme', 'The input URL is not a valid URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new FetchInputError('scheme', `Only http and https URLs are allowed, not "${u.protocol.replace(/:$/, '')}"`);
  }
  if (u.username || u.password) throw new FetchInputError('scheme', 'URLs containing credentials are not allowed');
  // Port 0 can never be connected to: refused here, where a callback_url is checked at create, not at delivery.
  if (u.port === '0') throw new FetchInputError('scheme', 'Port 0 is not a port that can be connected to');
  return u;
}

function resolveLocation(location: string, base: URL): string {
  try {
    return new URL(location, base).href;
  } catch {
    throw new FetchInputError('network', 'The remote server sent an invalid redirect');
  }
}

/** URL.hostname keeps IPv6 brackets; node APIs want them off. */
function bareHost(u: URL): string {
  return u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
}

/** Who may be connected to: what resolveAndCheck needs of the options. */
export type AddressPolicy = Pick<FetchInputOptions, 'allowPrivate' | 'lookup' | 'testOnlyConnectTo'>;

/**
 * One hop of a guarded request, for callers that need more than fetchToFile (request headers, their own
 * redirect policy): parses and checks `raw`, resolves its host and refuses non-public addresses (metadata
 * addresses always), then sends a GET connected to exactly the checked address. Redirects are NOT followed:
 * the caller checks every Location with this same function.
 */
export async function guardedGet(
  raw: string,
  policy: AddressPolicy,
  signal: AbortSignal,
  headers: Record<string, string> = {},
): Promise<http.IncomingMessage> {
  const target = parseTarget(raw);
  const pinned = await resolveAndCheck(target, policy, signal);
  return sendRequest(target, pinned, signal, headers);
}

/**
 * guardedGet's POST: the same checks and address pinning, for webhook deliveries. Redirects are not
 * followed (a 3xx is the receiver's answer, not a new target).
 */
export async function guardedPost(
  raw: string,
  policy: AddressPolicy,
  signal: AbortSignal,
  body: Buffer,
  headers: Record<string, string>,
): Promise<http.IncomingMessage> {
  const target = parseTarget(raw);
  const pinned = await resolveAndCheck(target, policy, signal);
  return sendRequest(target, pinned, signal, { 'content-length': String(body.length), ...headers }, body);
}

/** Only the check of guardedGet (for an injected fetch that connects by itself: no pinning then). */
export async function checkTarget(raw: string, policy: AddressPolicy, signal: AbortSignal): Promise<void> {
  await resolveAndCheck(parseTarget(raw), policy, signal);
}

async function resolveAndCheck(target: URL, opts: AddressPolicy, signal: AbortSignal): Promise<ResolvedAddress> {
  const host = bareHost(target);
  const literal = net.isIP(host);
  let addrs: ResolvedAddress[];
  if (literal !== 0) {
    addrs = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addrs = await abortable((opts.lookup ?? defaultLookup)(host), signal);
    } catch (err) {
      if (signal.aborted) throw err;
      throw new FetchInputError('dns', `Could not resolve host "${host}"`);
    }
    if (addrs.length === 0) throw new FetchInputError('dns', `Could not resolve host "${host}"`);
  }
  for (const a of addrs) {
    if (isMetadataAddress(a.address) || (!opts.allowPrivate && isBlockedAddress(a.address))) {
      throw new FetchInputError(
        'blocked_address',
        `Host "${host}" points to a private, local or reserved network address, which is not allowed`,
      );
    }
  }
  const first = addrs[0]!;
  return opts.testOnlyConnectTo ? opts.testOnlyConnectTo(first) : first;
}

function parseAddress(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (!ipaddr.isValid(ip)) return null;
  const addr = ipaddr.parse(ip);
  // Judge IPv4-mapped forms (::ffff:a.b.c.d) by the IPv4 address they really reach.
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
    ? (addr as ipaddr.IPv6).toIPv4Address()
    : addr;
}

function isMetadataAddress(ip: string): boolean {
  const addr = parseAddress(ip);
  return addr !== null && METADATA_ADDRESSES.some((m) => m.kind() === addr.kind() && m.toNormalizedString() === addr.toNormalizedString());
}

function v4FromParts(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

/** True unless the address is ordinary public unicast (allow-list: anything unusual is refused). */
export function isBlockedAddress(ip: string): boolean {
  const addr = parseAddress(ip);
  if (addr === null) return true;
  if (isMetadataAddress(ip)) return true;
  if (addr.kind() === 'ipv4') return addr.range() !== 'unicast';
  const v6 = addr as ipaddr.IPv6;
  const p = v6.parts;
  switch (v6.range()) {
    // Translation prefixes embed an IPv4 address: the embedded one is what gets reached.
    case 'rfc6145':
    case 'rfc6052':
      return v4FromParts(p[6]!, p[7]!).range() !== 'unicast';
    case '6to4':
      return v4FromParts(p[1]!, p[2]!).range() !== 'unicast';
    case 'unicast':
      return !v6.match(GLOBAL_UNICAST_V6);
    default:
      return true;
  }
}

function sendRequest(
  target: URL,
  pinned: ResolvedAddress,
  signal: AbortSignal,
  extraHeaders: Record<string, string> = {},
  body?: Buffer,
): Promise<http.IncomingMessage> {
  const isHttps = target.protocol === 'https:';
  const host = bareHost(target);
  // Node asks this instead of DNS: it always answers with the address we already checked.
  const lookup: net.LookupFunction = (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  };
  const options: https.RequestOptions = {
    host,
    port: target.port || (isHttps ? 443 : 80),
    path: `${target.pathname}${target.search}`,
    method: body ? 'POST' : 'GET',
    // No pooled agent: a kept-alive socket is keyed by name, not by the address we checked.
    agent: false,
    signal,
    lookup,
    headers: { 'user-agent': 'Soundry/0.1', accept: '*/*', 'accept-encoding': 'identity', ...extraHeaders },
    // SNI and certificate checks use the name; IP literals carry no SNI.
    ...(isHttps && net.isIP(host) === 0 ? { servername: host } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = (isHttps ? https : http).request(options, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

async function streamToFile(
  res: http.IncomingMessage,
  destPath: string,
  maxBytes: number,
  signal: AbortSignal,
  onBytes: (n: number) => void,
): Promise<{ bytes: number; head: Buffer }> {
  let bytes = 0;
  const head: Buffer[] = [];
  let headLen = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
      bytes += chunk.length;
      onBytes(chunk.length);
      if (bytes > maxBytes) return cb(tooLarge(maxBytes));
      if (headLen < SNIFF_BYTES) {
        const part = chunk.subarray(0, SNIFF_BYTES - headLen);
        head.push(part);
        headLen += part.length;
      }
      cb(null, chunk);
    },
  });
  await pipeline(res, counter, createWriteStream(destPath), { signal });
  return { bytes, head: Buffer.concat(head) };
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function tooLarge(maxBytes: number): FetchInputError {
  const mb = maxBytes / (1024 * 1024);
  const limit = mb >= 1 ? `${Number(mb.toFixed(1))} MB` : `${maxBytes} bytes`;
  return new FetchInputError('too_large', `The file is larger than the allowed ${limit}`);
}

function toFetchError(err: unknown, target: URL, timedOut: boolean, opts: FetchInputOptions, stalled: boolean): FetchInputError {
  if (err instanceof FetchInputError) return err;
  if (stalled) {
    return new FetchInputError('stalled', `The download stalled: less than ${opts.minBytesPerSecond} bytes/s over ${(opts.rateWindowMs ?? 30_000) / 1000} s (INPUT_MIN_BYTES_PER_SECOND)`);
  }
  if (timedOut) {
    return new FetchInputError('timeout', `The download did not finish within ${Math.ceil(opts.timeoutMs / 1000)} s`);
  }
  if (opts.signal?.aborted) return new FetchInputError('network', 'The download was cancelled');
  const host = bareHost(target);
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const why: Record<string, string> = {
    ECONNREFUSED: `Connection to "${host}" was refused`,
    ECONNRESET: `Connection to "${host}" was reset`,
    EHOSTUNREACH: `Host "${host}" is unreachable`,
    ENETUNREACH: `Host "${host}" is unreachable`,
    ETIMEDOUT: `Connection to "${host}" timed out`,
    ERR_STREAM_PREMATURE_CLOSE: `Connection to "${host}" closed before the download finished`,
  };
  if (code && why[code]) return new FetchInputError('network', why[code]);
  if (code && (code.startsWith('ERR_TLS') || code.includes('CERT') || code.startsWith('ERR_SSL'))) {
    return new FetchInputError('network', `Secure connection to "${host}" failed (TLS error)`);
  }
  return new FetchInputError('network', `Download from "${host}" failed`);
}
