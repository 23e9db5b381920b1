/** HTML pages: Readability's main content and title over a linkedom DOM. */
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { TaskFailure } from '../../../domain/errors.js';
import { cleanText, domText, letterCount } from './clean.js';
import { languageFromTag } from './language.js';

export interface HtmlExtract {
  title: string;
  text: string;
  /** From <html lang>, mapped to a spec key. */
  langTag: string | null;
}

/** Decodes bytes with the charset the page declares (header or <meta>), UTF-8 otherwise. */
export function decodeHtml(bytes: Buffer, contentType: string | null): string {
  const fromHeader = /charset=["']?([\w-]+)/i.exec(contentType ?? '')?.[1];
  const head = bytes.toString('latin1', 0, Math.min(bytes.length, 4096));
  const fromMeta = /<meta[^>]+charset=["']?([\w-]+)/i.exec(head)?.[1];
  for (const label of [fromHeader, fromMeta, 'utf-8']) {
    if (!label) continue;
    try {
      return new TextDecoder(label).decode(bytes);
    } catch {
      /* unknown label: try the next */
    }
  }
  return bytes.toString('utf8');
}

type Doc = ReturnType<typeof parseHTML>['document'];

export function parseDocument(html: string): Doc {
  return parseHTML(html).document;
}

export function extractHtml(html: string): HtmlExtract {
  const document = parseDocument(html);
  const langTag = languageFromTag(document.documentElement?.getAttribute('lang'));
  const docTitle = metaTitle(document);
  // Readability mutates the DOM it is given, so it gets its own copy.
  const article = new Readability(parseDocument(html) as unknown as Document, { charThreshold: 300 }).parse();
  let text = '';
  if (article?.content) text = cleanText(domText(parseDocument(`<html><body>${article.content}</body></html>`)));
  if (letterCount(text) < 200) {
    // Readability found no article: fall back to the body without page chrome, if that holds real prose.
    const body = parseDocument(html);
    for (const sel of ['nav', 'header', 'footer', 'aside', 'form', '[role=navigation]', '[aria-hidden=true]']) {
      for (const el of Array.from(body.querySelectorAll(sel))) el.remove();
    }
    const fallback = cleanText(domText(body.body ?? body));
    const paragraphs = fallback.split('\n\n').filter((p) => letterCount(p) >= 60);
    text = paragraphs.join('\n\n');
  }
  if (letterCount(text) < 200) throw new TaskFailure('The page has no readable article text');
  const title = (article?.title?.trim() || docTitle || firstLine(text)).replace(/[ \t\r\n]+/g, ' ');
  return { title, text, langTag };
}

function metaTitle(document: Doc): string {
  const og = document.querySelector('meta[property="og:title"]')?.getAttribute('content');
  return (og || document.querySelector('title')?.textContent || '').trim();
}

export function firstLine(text: string): string {
  const line = (text.split('\n').find((l) => l.trim()) ?? '').replace(/^["“'«]+|["”'»]+$/g, '').trim();
  return line.length > 80 ? `${line.slice(0, 77).replace(/\s+\S*$/, '')}…` : line;
}
