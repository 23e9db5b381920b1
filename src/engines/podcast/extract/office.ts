/** Zip-based documents: DOCX (mammoth), PPTX and XLSX (OOXML parts), EPUB (spine order). */
import type JSZip from 'jszip';
import mammoth from 'mammoth';
import { TaskFailure } from '../../../domain/errors.js';
import { cleanText, decodeEntities, domText, letterCount } from './clean.js';
import { parseDocument } from './html.js';
import { openCheckedZip } from './zip-guard.js';

export interface DocExtract {
  title: string;
  text: string;
  langTag: string | null;
}

/** Every zip-based document is checked against the archive limits (entry count, unpacked size) first. */
function openZip(bytes: Buffer): Promise<JSZip> {
  return openCheckedZip(bytes);
}

const tagText = (xml: string, tag: string): string | null => {
  const m = new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`).exec(xml);
  return m ? decodeEntities(m[1]!.replace(/<[^>]+>/g, '')).trim() : null;
};

async function coreProps(zip: JSZip): Promise<{ title: string; lang: string | null }> {
  const core = (await zip.file('docProps/core.xml')?.async('string')) ?? '';
  return { title: tagText(core, 'dc:title') ?? '', lang: tagText(core, 'dc:language') };
}

export async function extractDocx(bytes: Buffer): Promise<DocExtract> {
  const zip = await openZip(bytes);
  const { title, lang } = await coreProps(zip);
  let html: string;
  try {
    // Images are never read (mammoth would inline each as base64): only the text is wanted, and an oversized
    // image in an attachment then costs nothing.
    html = (await mammoth.convertToHtml({ buffer: bytes }, { convertImage: mammoth.images.imgElement(async () => ({ src: '' })) })).value;
  } catch {
    throw new TaskFailure('The Word document could not be read');
  }
  const doc = parseDocument(`<html><body>${html}</body></html>`);
  let text = cleanText(domText(doc.body ?? doc));
  if (letterCount(text) < 200) {
    // mammoth drops equations (OMML); read the paragraphs' text and math runs directly instead.
    const xml = (await zip.file('word/document.xml')?.async('string')) ?? '';
    const paras = (xml.match(/<w:p[\s>][\s\S]*?<\/w:p>/g) ?? []).map((p) =>
      [...p.matchAll(/<(w|m):t(?:\s[^>]*)?>([\s\S]*?)<\/\1:t>/g)].map((m) => decodeEntities(m[2]!)).join(''),
    );
    const raw = cleanText(paras.join('\n'));
    if (letterCount(raw) > letterCount(text)) text = raw;
  }
  // A short first paragraph is the document's title far more often than its first heading is.
  const first = text.split('\n').find((l) => l.trim()) ?? '';
  const heading = doc.querySelector('h1,h2')?.textContent?.trim() ?? '';
  const guess = first.length <= 150 && !/[.:;,]$/.test(first) ? first : heading;
  return { title: title || guess, text, langTag: lang };
}

/** Paragraphs of DrawingML text (<a:p> holding <a:t> runs), in document order. */
function drawingParagraphs(xml: string): string[] {
  const out: string[] = [];
  for (const p of xml.match(/<a:p[\s>][\s\S]*?<\/a:p>/g) ?? []) {
    const runs = [...p.matchAll(/<a:t(?:\s[^>]*)?>([\s\S]*?)<\/a:t>/g)].map((m) => decodeEntities(m[1]!));
    const line = runs.join('').trim();
    if (line) out.push(line);
  }
  return out;
}

const byNumber = (a: string, b: string) => Number(/(\d+)\.xml$/.exec(a)?.[1] ?? 0) - Number(/(\d+)\.xml$/.exec(b)?.[1] ?? 0);

export async function extractPptx(bytes: Buffer): Promise<DocExtract> {
  const zip = await openZip(bytes);
  const { title, lang } = await coreProps(zip);
  const slides = Object.keys(zip.files).filter((n) => /^ppt\/slides\/slide\d+\.xml$/.test(n)).sort(byNumber);
  const blocks: string[] = [];
  let firstTitle = '';
  for (const name of slides) {
    const xml = await zip.file(name)!.async('string');
    const paras = drawingParagraphs(xml);
    if (!firstTitle && paras[0]) firstTitle = paras[0];
    // Speaker notes often carry the actual explanation of a slide.
    const notesName = name.replace('slides/slide', 'notesSlides/notesSlide');
    const notes = zip.file(notesName) ? drawingParagraphs(await zip.file(notesName)!.async('string')).filter((l) => !/^\d+$/.test(l)) : [];
    if (paras.length || notes.length) blocks.push([...paras, ...notes].join('\n'));
  }
  return { title: title || firstTitle, text: cleanText(blocks.join('\n\n')), langTag: lang };
}

export async function extractXlsx(bytes: Buffer): Promise<DocExtract> {
  const zip = await openZip(bytes);
  const { title, lang } = await coreProps(zip);
  const sharedXml = (await zip.file('xl/sharedStrings.xml')?.async('string')) ?? '';
  const shared = (sharedXml.match(/<si>[\s\S]*?<\/si>/g) ?? []).map((si) =>
    decodeEntities([...si.matchAll(/<t(?:\s[^>]*)?>([\s\S]*?)<\/t>/g)].map((m) => m[1]).join('')),
  );
  const sheets = Object.keys(zip.files).filter((n) => /^xl\/worksheets\/sheet\d+\.xml$/.test(n)).sort(byNumber);
  const lines: string[] = [];
  for (const name of sheets) {
    const xml = await zip.file(name)!.async('string');
    for (const row of xml.match(/<row[\s>][\s\S]*?<\/row>/g) ?? []) {
      const cells: string[] = [];
      for (const c of row.match(/<c[\s>][\s\S]*?(?:<\/c>|\/>)/g) ?? []) {
        const v = /<v>([\s\S]*?)<\/v>/.exec(c)?.[1] ?? tagText(c, 't');
        if (v == null) continue;
        cells.push(/t="s"/.test(c) ? (shared[Number(v)] ?? '') : decodeEntities(v));
      }
      if (cells.some((x) => x.trim())) lines.push(cells.join(', '));
    }
    lines.push('');
  }
  return { title, text: cleanText(lines.join('\n')), langTag: lang };
}

export async function extractEpub(bytes: Buffer): Promise<DocExtract> {
  const zip = await openZip(bytes);
  const container = (await zip.file('META-INF/container.xml')?.async('string')) ?? '';
  const opfPath = /full-path="([^"]+)"/.exec(container)?.[1];
  const opf = opfPath ? await zip.file(opfPath)?.async('string') : undefined;
  if (!opfPath || !opf) throw new TaskFailure('The EPUB file has no package document');
  const baseDir = opfPath.includes('/') ? opfPath.slice(0, opfPath.lastIndexOf('/') + 1) : '';
  const manifest = new Map<string, string>();
  for (const m of opf.matchAll(/<item\s[^>]*>/g)) {
    const id = /\bid="([^"]+)"/.exec(m[0])?.[1];
    const href = /\bhref="([^"]+)"/.exec(m[0])?.[1];
    if (id && href) manifest.set(id, href);
  }
  const chapters: string[] = [];
  for (const m of opf.matchAll(/<itemref\s[^>]*idref="([^"]+)"[^>]*>/g)) {
    const href = manifest.get(m[1]!);
    if (!href) continue;
    const path = normalizePath(baseDir + decodeURIComponent(href));
    const xhtml = await zip.file(path)?.async('string');
    if (!xhtml) continue;
    const doc = parseDocument(xhtml);
    chapters.push(domText(doc.body ?? doc));
  }
  return { title: tagText(opf, 'dc:title') ?? '', text: cleanText(chapters.join('\n\n')), langTag: tagText(opf, 'dc:language') };
}

function normalizePath(p: string): string {
  const out: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '..') out.pop();
    else if (seg && seg !== '.') out.push(seg);
  }
  return out.join('/');
}
