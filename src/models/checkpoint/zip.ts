/**
 * A bounded reader of a ZIP archive's central directory, for torch.save files: it lists the entries and finds where
 * each stored entry's bytes begin, without reading them. torch.save writes every entry stored (never deflated), with
 * local headers whose sizes are zero (a data descriptor follows the data) and whose extra field pads the data to a
 * 64-byte boundary, and always with ZIP64 end records; so sizes come from the central directory and the data offset
 * from the local header's own name and extra lengths (the central copy of the extra field differs).
 *
 * Hand-written rather than yauzl: yauzl would still leave the local-header read to us (its data offset is internal to
 * its stream API), and a torch file needs only this much of the format. Every number read is untrusted: the end
 * record search, the directory's size and entry count, and each name are bounded, and every range must lie in the file.
 */
import type { FileHandle } from 'node:fs/promises';

/** The end record (22 bytes) plus the longest comment a ZIP can carry. */
const MAX_EOCD_SEARCH = 22 + 0xffff;
/** torch writes a handful of entries per storage; the 53-stem RoFormer has a few thousand. */
const MAX_ENTRIES = 200_000;
const MAX_DIRECTORY_BYTES = 64 * 1024 * 1024;
const MAX_NAME_BYTES = 4096;

const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const SIG_ZIP64_EOCD = 0x06064b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_LOCAL = 0x04034b50;

export interface ZipEntry {
  readonly name: string;
  /** 0 = stored, 8 = deflated, ... */
  readonly method: number;
  readonly flags: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly localHeaderOffset: number;
}

export interface ZipDirectory {
  readonly entries: ReadonlyMap<string, ZipEntry>;
  /** Where the central directory begins: every entry's data must end before it. */
  readonly directoryOffset: number;
}

/** Thrown with the reason only; the caller prefixes the file's name. */
export class ZipFormatError extends Error {}

function fail(why: string): never {
  throw new ZipFormatError(why);
}

async function readAt(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  const { bytesRead } = await fh.read(buf, 0, length, position);
  if (bytesRead !== length) fail(`the file ends inside a record at offset ${position} (truncated?)`);
  return buf;
}

/** A 64-bit field as a number; sizes past 2^53 bytes cannot describe a real file. */
function u64(buf: Buffer, at: number, what: string): number {
  const v = buf.readBigUInt64LE(at);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) fail(`${what} ${v} is out of range`);
  return Number(v);
}

interface EndRecord {
  entryCount: number;
  directorySize: number;
  directoryOffset: number;
}

async function readEndRecord(fh: FileHandle, fileSize: number): Promise<EndRecord> {
  if (fileSize < 22) fail('it is too short to be a ZIP archive');
  const tailLength = Math.min(fileSize, MAX_EOCD_SEARCH);
  const tailStart = fileSize - tailLength;
  const tail = await readAt(fh, tailStart, tailLength);
  // The last signature whose comment length reaches exactly to the end of the file: a signature inside the comment
  // (or inside stored data) would not.
  let at = -1;
  for (let i = tailLength - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === SIG_EOCD && i + 22 + tail.readUInt16LE(i + 20) === tailLength) {
      at = i;
      break;
    }
  }
  if (at < 0) fail('no ZIP end-of-central-directory record (truncated, or not a ZIP archive)');
  const disk = tail.readUInt16LE(at + 4);
  const cdDisk = tail.readUInt16LE(at + 6);
  let entryCount = tail.readUInt16LE(at + 10);
  let directorySize = tail.readUInt32LE(at + 12);
  let directoryOffset = tail.readUInt32LE(at + 16);
  const eocdOffset = tailStart + at;
  // A ZIP64 locator sits just before the end record; torch writes one even for small files.
  if (eocdOffset >= 20) {
    const locator = await readAt(fh, eocdOffset - 20, 20);
    if (locator.readUInt32LE(0) === SIG_ZIP64_LOCATOR) {
      const recordOffset = u64(locator, 8, 'ZIP64 end record offset');
      if (recordOffset + 56 > eocdOffset - 20) fail('the ZIP64 end record lies outside the file');
      const record = await readAt(fh, recordOffset, 56);
      if (record.readUInt32LE(0) !== SIG_ZIP64_EOCD) fail('the ZIP64 locator points at no ZIP64 end record');
      if (record.readUInt32LE(16) !== 0 || record.readUInt32LE(20) !== 0) fail('multi-disk archives are not supported');
      entryCount = u64(record, 32, 'ZIP64 entry count');
      directorySize = u64(record, 40, 'ZIP64 directory size');
      directoryOffset = u64(record, 48, 'ZIP64 directory offset');
      return checked({ entryCount, directorySize, directoryOffset }, recordOffset);
    }
  }
  if (disk !== 0 || cdDisk !== 0) fail('multi-disk archives are not supported');
  return checked({ entryCount, directorySize, directoryOffset }, eocdOffset);
}

function checked(end: EndRecord, directoryEnd: number): EndRecord {
  if (end.entryCount > MAX_ENTRIES) fail(`it declares ${end.entryCount} entries (at most ${MAX_ENTRIES})`);
  if (end.directorySize > MAX_DIRECTORY_BYTES) fail(`its central directory is ${end.directorySize} bytes (at most ${MAX_DIRECTORY_BYTES})`);
  if (end.entryCount * 46 > end.directorySize) fail(`its central directory (${end.directorySize} bytes) cannot hold ${end.entryCount} entries`);
  if (end.directoryOffset + end.directorySize > directoryEnd) fail('its central directory lies outside the file');
  return end;
}

/** The central directory's entries by name. Duplicate names are refused: which one torch would read is unclear. */
export async function readZipDirectory(fh: FileHandle, fileSize: number): Promise<ZipDirectory> {
  const end = await readEndRecord(fh, fileSize);
  const dir = end.directorySize > 0 ? await readAt(fh, end.directoryOffset, end.directorySize) : Buffer.alloc(0);
  const entries = new Map<string, ZipEntry>();
  let p = 0;
  for (let i = 0; i < end.entryCount; i++) {
    if (p + 46 > dir.length || dir.readUInt32LE(p) !== SIG_CENTRAL) fail(`central directory entry ${i} is malformed`);
    const flags = dir.readUInt16LE(p + 8);
    const method = dir.readUInt16LE(p + 10);
    let compressedSize = dir.readUInt32LE(p + 20);
    let size = dir.readUInt32LE(p + 24);
    const nameLength = dir.readUInt16LE(p + 28);
    const extraLength = dir.readUInt16LE(p + 30);
    const commentLength = dir.readUInt16LE(p + 32);
    let localHeaderOffset = dir.readUInt32LE(p + 42);
    if (nameLength > MAX_NAME_BYTES) fail(`central directory entry ${i} has a ${nameLength}-byte name`);
    const next = p + 46 + nameLength + extraLength + commentLength;
    if (next > dir.length) fail(`central directory entry ${i} runs past the directory`);
    const name = dir.toString('utf8', p + 46, p + 46 + nameLength);
    // ZIP64 extended information: the 64-bit values of exactly those fields that are saturated, in this order.
    let e = p + 46 + nameLength;
    const extraEnd = e + extraLength;
    while (e + 4 <= extraEnd) {
      const id = dir.readUInt16LE(e);
      const len = dir.readUInt16LE(e + 2);
      if (e + 4 + len > extraEnd) fail(`entry '${name}' has a malformed extra field`);
      if (id === 0x0001) {
        let q = e + 4;
        const take = (what: string): number => {
          if (q + 8 > e + 4 + len) fail(`entry '${name}' has a short ZIP64 extra field`);
          const v = u64(dir, q, what);
          q += 8;
          return v;
        };
        if (size === 0xffffffff) size = take('entry size');
        if (compressedSize === 0xffffffff) compressedSize = take('entry compressed size');
        if (localHeaderOffset === 0xffffffff) localHeaderOffset = take('entry offset');
      }
      e += 4 + len;
    }
    if (entries.has(name)) fail(`entry '${name}' appears twice`);
    if (localHeaderOffset + 30 + compressedSize > end.directoryOffset) fail(`entry '${name}' lies outside the archive's data`);
    entries.set(name, { name, method, flags, compressedSize, size, localHeaderOffset });
    p = next;
  }
  return { entries, directoryOffset: end.directoryOffset };
}

/**
 * Where a stored entry's bytes begin, from its local header (whose extra field holds torch's alignment padding).
 * Compressed or encrypted entries are refused: their bytes cannot be used in place.
 */
export async function storedDataOffset(fh: FileHandle, dir: ZipDirectory, entry: ZipEntry): Promise<number> {
  if (entry.flags & 0x1) fail(`entry '${entry.name}' is encrypted`);
  if (entry.method !== 0) {
    // torch.save never compresses: a deflated entry means the file was repacked by some other tool.
    fail(`entry '${entry.name}' is compressed (method ${entry.method}), which torch.save never writes: load and save the file again with torch.save`);
  }
  if (entry.compressedSize !== entry.size) fail(`entry '${entry.name}' is stored but its sizes differ`);
  const local = await readAt(fh, entry.localHeaderOffset, 30);
  if (local.readUInt32LE(0) !== SIG_LOCAL) fail(`entry '${entry.name}' has no local header where the directory says`);
  const nameLength = local.readUInt16LE(26);
  const extraLength = local.readUInt16LE(28);
  const start = entry.localHeaderOffset + 30 + nameLength + extraLength;
  if (start + entry.size > dir.directoryOffset) fail(`entry '${entry.name}' runs into the central directory`);
  return start;
}

/** A whole (small) stored entry, e.g. `data.pkl`, bounded by `maxBytes`. */
export async function readStoredEntry(fh: FileHandle, dir: ZipDirectory, entry: ZipEntry, maxBytes: number): Promise<Buffer> {
  if (entry.size > maxBytes) fail(`entry '${entry.name}' is ${entry.size} bytes (at most ${maxBytes})`);
  const start = await storedDataOffset(fh, dir, entry);
  return readAt(fh, start, entry.size);
}
