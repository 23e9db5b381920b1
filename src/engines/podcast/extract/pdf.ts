/** PDFs: pdfjs text in page order, lines rebuilt from positions, hyphenation undone, running headers dropped. */
import { TaskFailure } from '../../../domain/errors.js';

interface Item {
  str: string;
  x: number;
  y: number;
  h: number;
  w: number;
  eol: boolean;
}

interface Line {
  text: string;
  y: number;
  h: number;
}

/** Pages read at most: a longer PDF is read up to here (the text is capped far below what 2,000 pages hold). */
export const PDF_MAX_PAGES = 2_000;
/** Characters read at most: past this the rest of the document is not needed (the source text is capped lower). */
const PDF_MAX_CHARS = 1_000_000;

export async function extractPdf(bytes: Buffer, opts: { maxPages?: number } = {}): Promise<{ title: string; text: string }> {
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  let doc;
  try {
    doc = await getDocument({ data: new Uint8Array(bytes), isEvalSupported: false, useSystemFonts: false, verbosity: 0 }).promise;
  } catch {
    throw new TaskFailure('The PDF file could not be read (it may be damaged or password-protected)');
  }
  try {
    const pages: Line[][] = [];
    // The page count is the document's claim (a page tree can declare 200,000 pages): only the first pages are read.
    const last = Math.min(doc.numPages, opts.maxPages ?? PDF_MAX_PAGES);
    let chars = 0;
    for (let p = 1; p <= last && chars < PDF_MAX_CHARS; p++) {
      const page = await doc.getPage(p).catch(() => null);
      if (!page) break;
      const width = page.getViewport({ scale: 1 }).width;
      const content = await page.getTextContent();
      const items: Item[] = [];
      const numberColumns = lineNumberColumns(content.items);
      for (const it of content.items) {
        if (!('str' in it)) continue;
        const x = it.transform[4] as number;
        // Line numbers (journal drafts, court transcripts) are layout, not text.
        if (/^\d{1,3}$/.test(it.str.trim()) && (numberColumns.has(Math.round(x)) || x < width * 0.08 || x > width * 0.9)) continue;
        items.push({ str: it.str, x, y: it.transform[5] as number, h: Math.abs(it.transform[3] as number) || it.height, w: it.width, eol: it.hasEOL });
      }
      const lines = toLines(items);
      for (const l of lines) chars += l.text.length;
      pages.push(lines);
      page.cleanup();
    }
    const meta = await doc.getMetadata().catch(() => null);
    const info = (meta?.info ?? {}) as { Title?: unknown };
    const metaTitle = typeof info.Title === 'string' ? info.Title.trim() : '';
    const text = joinPages(dropRunningLines(pages));
    if (!text.trim()) throw new TaskFailure('The PDF has no extractable text (it may be a scanned image)');
    // Producer junk such as "10811.exe" or "Microsoft Word - draft.doc" is not a title.
    const usable = metaTitle.length > 3 && !/\.\w{2,4}$/.test(metaTitle) && !/^(microsoft word|untitled)/i.test(metaTitle);
    return { title: usable ? metaTitle : largestLine(pages[0] ?? []), text };
  } finally {
    await doc.destroy();
  }
}

/** x positions (rounded) holding five or more bare numbers on one page: a line-number column. */
function lineNumberColumns(items: ReadonlyArray<object>): Set<number> {
  const counts = new Map<number, number>();
  for (const it of items) {
    if (!('str' in it) || !('transform' in it)) continue;
    const { str, transform } = it as { str: string; transform: number[] };
    if (!/^\d{1,3}$/.test(str.trim())) continue;
    const x = Math.round(transform[4]!);
    counts.set(x, (counts.get(x) ?? 0) + 1);
  }
  return new Set([...counts].filter(([, n]) => n >= 5).map(([x]) => x));
}

function toLines(items: Item[]): Line[] {
  const lines: Line[] = [];
  let cur: Item[] = [];
  const flush = () => {
    const text = cur.map((i) => i.str).join('').replace(/\s+/g, ' ').trim();
    if (text && !/^\d{1,4}$/.test(text)) lines.push({ text, y: cur[0]!.y, h: Math.max(...cur.map((i) => i.h)) });
    cur = [];
  };
  for (const it of items) {
    if (cur.length && Math.abs(it.y - cur[cur.length - 1]!.y) > Math.max(2, it.h * 0.6) && it.str.trim()) flush();
    if (cur.length && it.str && !/\s$/.test(cur[cur.length - 1]!.str) && !/^\s/.test(it.str) && it.x > 0) {
      // pdfjs often omits the space between two runs on one line.
      const prev = cur[cur.length - 1]!;
      if (it.x - (prev.x + prev.w) > prev.h * 0.15) cur.push({ ...prev, str: ' ' });
    }
    if (it.str) cur.push(it);
    if (it.eol) flush();
  }
  flush();
  return lines;
}

/** Lines repeated (digits ignored) on at least half of the pages are headers or footers. */
function dropRunningLines(pages: Line[][]): Line[][] {
  if (pages.length < 3) return pages;
  const key = (l: Line) => l.text.replace(/\d+/g, '#').toLowerCase();
  const freq = new Map<string, number>();
  for (const page of pages) for (const k of new Set(page.map(key))) freq.set(k, (freq.get(k) ?? 0) + 1);
  return pages.map((page) => page.filter((l) => (freq.get(key(l)) ?? 0) < pages.length / 2 || l.text.length > 120));
}

function joinPages(pages: Line[][]): string {
  const out: string[] = [];
  for (const page of pages) {
    let para = '';
    let prev: Line | null = null;
    for (const line of page) {
      // A gap well above the line height starts a new paragraph.
      const gap = prev ? prev.y - line.y : 0;
      if (prev && (gap > Math.max(prev.h, line.h) * 1.7 || gap < 0 || Math.abs(prev.h - line.h) > 1.5)) {
        out.push(para);
        para = '';
      }
      if (!para) para = line.text;
      else if (/[\p{L}]-$/u.test(para) && /^\p{Ll}/u.test(line.text)) para = para.slice(0, -1) + line.text;
      else if (/[\u3000-\u9fff\uff00-\uffef]$/u.test(para)) para += line.text;
      else para += ` ${line.text}`;
      prev = line;
    }
    if (para) out.push(para);
  }
  // A paragraph split by a page break continues when the next page starts in lower case.
  const merged: string[] = [];
  for (const p of out) {
    const last = merged[merged.length - 1];
    if (last && /^\p{Ll}/u.test(p) && !/[.!?:。]$/u.test(last)) {
      merged[merged.length - 1] = /[\p{L}]-$/u.test(last) ? last.slice(0, -1) + p : `${last} ${p}`;
    } else merged.push(p);
  }
  return merged.join('\n\n');
}

function largestLine(lines: Line[]): string {
  const top = lines.slice(0, 30);
  if (!top.length) return '';
  const maxH = Math.max(...top.map((l) => l.h));
  const start = top.findIndex((l) => l.h >= maxH - 0.5);
  const parts: string[] = [];
  for (let i = start; i < top.length && top[i]!.h >= maxH - 0.5; i++) {
    if (parts.length && parts.join(' ').length + top[i]!.text.length > 150) break;
    parts.push(top[i]!.text);
  }
  return parts.join(' ').slice(0, 200);
}
