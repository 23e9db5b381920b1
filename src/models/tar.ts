/**
 * Reads the members of a .tar.gz model archive in memory (DeepFilterNet publishes its ONNX export as one), never
 * extracting to disk. Model files are untrusted input even after their checksum matched (a site catalog may point at
 * anything), so every size is bounded before it is allocated: the gunzipped length (zlib's maxOutputLength stops the
 * inflate, so a gzip bomb costs at most the bound), the member count, each member's size; a member name that is
 * absolute or climbs out with `..` refuses the whole archive, as do duplicate names (which copy would be meant?),
 * links (never followed) and headers whose checksum is wrong. Formats: ustar and POSIX pax (`x` records for path and
 * size, as GNU tar writes them by default; DeepFilterNet's archive has them), GNU long names (`L`).
 */
import { gunzipSync } from 'node:zlib';

export interface TarLimits {
  /** Most bytes the gunzipped tar may have. */
  maxUnpackedBytes: number;
  /** Most entries (headers of files, folders and metadata) the archive may hold. */
  maxEntries: number;
  /** Most bytes one member may have. */
  maxMemberBytes: number;
}

export interface TarMember {
  /** The member's path as normalised here: `/`-separated, no `.` segments, never absolute, never with `..`. */
  name: string;
  data: Uint8Array;
}

const BLOCK = 512;

export class TarError extends Error {
  constructor(message: string) {
    super(`tar archive refused: ${message}`);
    this.name = 'TarError';
  }
}

function cString(b: Uint8Array, from: number, len: number): string {
  const end = b.subarray(from, from + len).indexOf(0);
  return Buffer.from(b.subarray(from, end < 0 ? from + len : from + end)).toString('utf8');
}

/** Octal numeric field, or GNU base-256 (high bit of the first byte set) for sizes past 8 GiB. */
function numeric(b: Uint8Array, from: number, len: number): number {
  if (b[from]! & 0x80) {
    if (b[from]! & 0x40) throw new TarError('negative number in a header');
    let v = b[from]! & 0x3f;
    for (let i = from + 1; i < from + len; i++) {
      v = v * 256 + b[i]!;
      if (v > Number.MAX_SAFE_INTEGER) throw new TarError('number in a header too large');
    }
    return v;
  }
  const s = cString(b, from, len).trim();
  if (s === '') return 0;
  if (!/^[0-7]+$/.test(s)) throw new TarError(`bad octal field "${s.slice(0, 20)}"`);
  return parseInt(s, 8);
}

function checksumOk(h: Uint8Array): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
  return sum === numeric(h, 148, 8);
}

/** Normalises a member path; refuses absolute paths and `..` so a name can never point outside the archive. */
export function safeMemberName(raw: string): string {
  const name = raw.replace(/\\/g, '/');
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw new TarError(`absolute member path "${raw}"`);
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..')) throw new TarError(`member path "${raw}" leaves the archive`);
  if (parts.some((p) => p.includes('\0'))) throw new TarError('member path with a NUL byte');
  return parts.join('/');
}

/** POSIX pax records: "<len> <key>=<value>\n", each length counting the whole record. */
function paxRecords(data: Uint8Array): Map<string, string> {
  const out = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    if (space < 0) break;
    const len = Number(Buffer.from(data.subarray(at, space)).toString('ascii'));
    if (!Number.isInteger(len) || len <= space - at || at + len > data.length) throw new TarError('malformed pax record');
    const rec = Buffer.from(data.subarray(space + 1, at + len - 1)).toString('utf8');
    const eq = rec.indexOf('=');
    if (eq > 0) out.set(rec.slice(0, eq), rec.slice(eq + 1));
    at += len;
  }
  return out;
}

/**
 * The regular-file members of a gunzipped tar held in `tar`, bounded by `limits`. Folders and pax/GNU metadata are
 * consumed; links and device entries refuse the archive (nothing here would follow one).
 */
export function readTar(tar: Uint8Array, limits: TarLimits): TarMember[] {
  const members: TarMember[] = [];
  const seen = new Set<string>();
  let at = 0;
  let entries = 0;
  let longName: string | null = null;
  let pax = new Map<string, string>();
  let global = new Map<string, string>();
  while (at + BLOCK <= tar.length) {
    const h = tar.subarray(at, at + BLOCK);
    if (h.every((x) => x === 0)) return members; // end of archive (one zero block is enough to stop)
    if (++entries > limits.maxEntries) throw new TarError(`more than ${limits.maxEntries} entries`);
    if (!checksumOk(h)) throw new TarError(`header checksum mismatch at byte ${at}`);
    const type = String.fromCharCode(h[156]!);
    // A pax `size` describes the entry after its record, never the next record itself.
    const meta = type === 'x' || type === 'g' || type === 'L';
    const override = meta ? undefined : pax.get('size') ?? global.get('size');
    const size = override !== undefined ? Number(override) : numeric(h, 124, 12);
    if (!Number.isSafeInteger(size) || size < 0) throw new TarError('bad member size');
    if (size > limits.maxMemberBytes) throw new TarError(`a member of ${size} bytes (more than ${limits.maxMemberBytes})`);
    const dataAt = at + BLOCK;
    if (dataAt + size > tar.length) throw new TarError('truncated member');
    const data = tar.subarray(dataAt, dataAt + size);
    at = dataAt + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'x') {
      pax = paxRecords(data);
      continue;
    }
    if (type === 'g') {
      global = paxRecords(data);
      continue;
    }
    if (type === 'L') {
      longName = cString(data, 0, data.length);
      continue;
    }
    const prefix = h[257] === 0x75 /* 'u' of ustar */ ? cString(h, 345, 155) : '';
    const headerName = prefix ? `${prefix}/${cString(h, 0, 100)}` : cString(h, 0, 100);
    const raw = pax.get('path') ?? longName ?? headerName;
    pax = new Map();
    longName = null;
    const name = safeMemberName(raw);
    if (type === '5') continue; // folder
    if (type !== '0' && type !== '\0' && type !== '7') throw new TarError(`member "${raw}" is not a regular file (type ${JSON.stringify(type)})`);
    if (name === '') throw new TarError('member without a name');
    if (seen.has(name)) throw new TarError(`member "${name}" appears twice`);
    seen.add(name);
    members.push({ name, data });
  }
  throw new TarError('no end-of-archive marker (truncated archive)');
}

/** Gunzips with the output bounded before anything past it is inflated, then reads the tar. */
export function readTarGz(gz: Uint8Array, limits: TarLimits): TarMember[] {
  let tar: Buffer;
  try {
    tar = gunzipSync(gz, { maxOutputLength: limits.maxUnpackedBytes });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_BUFFER_TOO_LARGE' || e instanceof RangeError) throw new TarError(`unpacks to more than ${limits.maxUnpackedBytes} bytes`);
    throw new TarError(`not a gzip stream (${e.message})`);
  }
  return readTar(tar, limits);
}

/**
 * The one member whose file name (last path segment) is `base`, wherever the archive put it (DeepFilterNet's sits in
 * tmp/export/). Two candidates are an error rather than a guess.
 */
export function memberByBaseName(members: readonly TarMember[], base: string): TarMember {
  const found = members.filter((m) => m.name === base || m.name.endsWith(`/${base}`));
  if (found.length === 0) throw new TarError(`no member named ${base}`);
  if (found.length > 1) throw new TarError(`${found.length} members named ${base} (${found.map((m) => m.name).join(', ')})`);
  return found[0]!;
}
