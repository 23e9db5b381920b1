/**
 * Archive checks for zip-based documents (DOCX, PPTX, XLSX, EPUB), before any library reads an entry: the
 * entry count and the total uncompressed size the central directory declares, then every entry inflated as a
 * stream and counted (nothing kept), so a header that lies about its size is caught at the first byte over it.
 */
import { createInflateRaw } from 'node:zlib';
import JSZip from 'jszip';
import { TaskFailure } from '../../../domain/errors.js';

export interface ZipLimits {
  /** Files (and folders) in the archive. */
  entries: number;
  /** Bytes of all entries once unpacked. */
  totalBytes: number;
}

export const ZIP_LIMITS: ZipLimits = { entries: 10_000, totalBytes: 200 * 1024 * 1024 };

const mb = (n: number) => `${Math.round(n / (1024 * 1024))} MB`;

export function tooLargeMessage(limits: ZipLimits = ZIP_LIMITS): string {
  return `The attachment expands to more than ${mb(limits.totalBytes)} when unpacked (a decompression bomb or an oversized document): it is not read`;
}

export function tooManyMessage(limits: ZipLimits = ZIP_LIMITS): string {
  return `The attachment holds more than ${limits.entries.toLocaleString('en-US')} files: it is not read`;
}

/** Entry count from the end-of-central-directory record, before a parser builds an object per entry. */
function declaredEntries(bytes: Buffer): number | null {
  const from = Math.max(0, bytes.length - 22 - 0xffff);
  for (let i = bytes.length - 22; i >= from; i--) {
    if (bytes.readUInt32LE(i) === 0x06054b50) {
      const n = bytes.readUInt16LE(i + 10);
      return n === 0xffff ? null : n; // zip64: the parser's count decides
    }
  }
  return null;
}

interface EntryData {
  uncompressedSize: number;
  compressedSize: number;
  compression: { magic: string } | null;
  compressedContent: Uint8Array;
}

/** Inflated length of raw DEFLATE data, stopping (and failing) as soon as it passes `max`. */
function inflatedLength(data: Uint8Array, max: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const inflate = createInflateRaw({ chunkSize: 256 * 1024 });
    let n = 0;
    let over = false;
    inflate.on('data', (chunk: Buffer) => {
      n += chunk.length;
      if (n > max && !over) {
        over = true;
        inflate.destroy();
        resolve(n);
      }
    });
    inflate.on('end', () => resolve(n));
    inflate.on('error', () => (over ? resolve(n) : reject(new TaskFailure('The document could not be opened (an entry of the zip container is damaged)'))));
    inflate.end(data);
  });
}

/** Opens the archive after checking it against the limits; throws a TaskFailure naming the limit. */
export async function openCheckedZip(bytes: Buffer, limits: ZipLimits = ZIP_LIMITS): Promise<JSZip> {
  const declared = declaredEntries(bytes);
  if (declared !== null && declared > limits.entries) throw new TaskFailure(tooManyMessage(limits));
  let zip: JSZip;
  try {
    zip = await JSZip.loadAsync(bytes);
  } catch {
    throw new TaskFailure('The document could not be opened (the file is not a valid zip container)');
  }
  const entries = Object.values(zip.files);
  if (entries.length > limits.entries) throw new TaskFailure(tooManyMessage(limits));
  const data = entries.map((e) => (e as unknown as { _data: EntryData })._data).filter((d) => d && typeof d.uncompressedSize === 'number');
  let claimed = 0;
  for (const d of data) {
    // JSZip reads sizes with 32-bit shifts: a declared size of 2 GiB or more comes out negative (found from
    // outside with an honest zip64 bomb of 3 GiB, which then failed as "damaged" instead of naming the limit).
    if (!(d.uncompressedSize >= 0) || !Number.isSafeInteger(d.uncompressedSize)) throw new TaskFailure(tooLargeMessage(limits));
    claimed += d.uncompressedSize;
  }
  if (claimed > limits.totalBytes) throw new TaskFailure(tooLargeMessage(limits));
  // The declared sizes are claims: count what each entry really inflates to, stopping at its claim.
  let total = 0;
  for (const d of data) {
    const magic = d.compression?.magic;
    const real = magic === '\x08\x00' ? await inflatedLength(d.compressedContent, Math.min(d.uncompressedSize, limits.totalBytes - total)) : d.compressedSize;
    if (real > d.uncompressedSize) {
      throw new TaskFailure(
        total + real > limits.totalBytes
          ? tooLargeMessage(limits)
          : 'The document could not be opened (an entry of the zip container unpacks to more than its header declares)',
      );
    }
    total += real;
  }
  return zip;
}
