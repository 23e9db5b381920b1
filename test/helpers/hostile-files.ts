/**
 * Hostile documents the suite makes itself: zip archives written by hand (so a header can lie about its
 * sizes, and a bomb's gigabytes never exist in memory), and PDFs with thousands of pages.
 */
import { createDeflateRaw, crc32 } from 'node:zlib';

export interface ZipEntry {
  name: string;
  /** Stored as is (method 0). */
  data?: Buffer;
  /** Deflated (method 8): the compressed bytes, the real size and CRC. */
  deflated?: { bytes: Buffer; size: number; crc: number };
  /** The size the headers declare (default: the real size). */
  claimedSize?: number;
}

/** `size` bytes of one repeated byte, deflated as a stream at level 9 (never held uncompressed). */
export async function deflatedRepeat(size: number, byte = 0x61): Promise<{ bytes: Buffer; size: number; crc: number }> {
  const chunk = Buffer.alloc(1024 * 1024, byte);
  const deflate = createDeflateRaw({ level: 9 });
  const out: Buffer[] = [];
  deflate.on('data', (b: Buffer) => out.push(b));
  const done = new Promise((r) => deflate.on('end', r));
  let crc = 0;
  for (let left = size; left > 0; left -= chunk.length) {
    const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
    crc = crc32(part, crc);
    if (!deflate.write(part)) await new Promise((r) => deflate.once('drain', r));
  }
  deflate.end();
  await done;
  return { bytes: Buffer.concat(out), size, crc };
}

export function deflated(data: string): Promise<{ bytes: Buffer; size: number; crc: number }> {
  return new Promise((resolve, reject) => {
    const buf = Buffer.from(data, 'utf8');
    const deflate = createDeflateRaw({ level: 9 });
    const out: Buffer[] = [];
    deflate.on('data', (b: Buffer) => out.push(b));
    deflate.on('end', () => resolve({ bytes: Buffer.concat(out), size: buf.length, crc: crc32(buf) }));
    deflate.on('error', reject);
    deflate.end(buf);
  });
}

/** A zip archive (no zip64: every size under 4 GB) from its entries, in order. */
export function writeZip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const method = e.deflated ? 8 : 0;
    const body = e.deflated ? e.deflated.bytes : (e.data ?? Buffer.alloc(0));
    const size = e.claimedSize ?? (e.deflated ? e.deflated.size : body.length);
    const crc = e.deflated ? e.deflated.crc : crc32(body);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc >>> 0, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc >>> 0, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += 30 + name.length + body.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Math.min(entries.length, 0xffff), 8);
  end.writeUInt16LE(Math.min(entries.length, 0xffff), 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/** The fixed parts of an EPUB whose one chapter is `chapter.xhtml`. */
export function epubFrame(): ZipEntry[] {
  return [
    { name: 'mimetype', data: Buffer.from('application/epub+zip') },
    { name: 'META-INF/container.xml', data: Buffer.from('<?xml version="1.0"?><container><rootfiles><rootfile full-path="content.opf"/></rootfiles></container>') },
    {
      name: 'content.opf',
      data: Buffer.from(
        '<?xml version="1.0"?><package><metadata><dc:title>Bomb</dc:title></metadata><manifest><item id="c1" href="chapter.xhtml"/></manifest><spine><itemref idref="c1"/></spine></package>',
      ),
    },
  ];
}

/** A DOCX with just enough parts for the sniffer and mammoth: `word/document.xml` is the caller's. */
export function docxFrame(): ZipEntry[] {
  return [
    {
      name: '[Content_Types].xml',
      data: Buffer.from(
        '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
      ),
    },
    {
      name: '_rels/.rels',
      data: Buffer.from(
        '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="r1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
      ),
    },
  ];
}

/**
 * A PDF of `pages` pages (a flat page tree; page i shows texts[i % texts.length], so no line repeats on half
 * the pages and passes for a running header), with a correct xref. `claimedPages` sets the page tree's /Count
 * instead (a document lying about its length).
 */
export function manyPagePdf(pages: number, texts: string[], claimedPages = pages): Buffer {
  const streams = texts.map((t) => {
    const content = `BT /F1 12 Tf 72 720 Td (${t.replace(/[()\\]/g, '')}) Tj ET`;
    return `<< /Length ${content.length} >>\nstream\n${content}\nendstream`;
  });
  const font = 3 + streams.length; // 1 catalog, 2 page tree, 3.. contents, then the font, then the pages
  const first = font + 1;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${Array.from({ length: pages }, (_, i) => `${first + i} 0 R`).join(' ')}] /Count ${claimedPages} >>`,
    ...streams,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  for (let i = 0; i < pages; i++) {
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${3 + (i % streams.length)} 0 R /Resources << /Font << /F1 ${font} 0 R >> >> >>`);
  }
  const parts: string[] = ['%PDF-1.4\n'];
  let length = parts[0]!.length;
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(length);
    const s = `${i + 1} 0 obj\n${o}\nendobj\n`;
    parts.push(s);
    length += s.length;
  });
  parts.push(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`);
  parts.push(`trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`);
  return Buffer.from(parts.join(''), 'latin1');
}
