/** HTML pages: Readability's main content and title over a linkedom DOM. */
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { TaskFailure } from '../../../domain/errors.js';
import { cleanText, domText, letterCount } from './clean.js';
import { languageFromTag } from './language.js';
import { utf16Encoding } from '../../../media/sniff.js';

export interface HtmlExtract {
  title: string;
  text: string;
  /** From <html lang>, mapped to a spec key. */
  langTag: string | null;
}

/** Decodes bytes with the charset the page declares (header or <meta>), UTF-8 otherwise. */
export function decodeHtml(bytes: Buffer, contentType: string | null): string {
  // A byte-order mark decides before any declared charset (WHATWG encoding sniffing).
  const bom = utf16Encoding(bytes);
  if (bom) return new TextDecoder(bom).decode(bytes);
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
  const forReadability = parseDocument(html);
  stripChrome(forReadability);
  const article = new Readability(forReadability as unknown as Document, { charThreshold: 300 }).parse();
  let text = '';
  if (article?.content) text = cleanText(domText(parseDocument(`<html><body>${article.content}</body></html>`)));
  if (letterCount(text) < 200) {
    // Readability found no article: fall back to the body without page chrome, if that holds real prose.
    const body = parseDocument(html);
    stripChrome(body);
    for (const sel of ['nav', 'header', 'footer', 'aside', 'form', '[role=navigation]', '[aria-hidden=true]']) {
      for (const el of Array.from(body.querySelectorAll(sel))) el.remove();
    }
    const fallback = cleanText(domText(body.body ?? body));
    const paragraphs = fallback.split('\n\n').filter((p) => letterCount(p) >= 60);
    text = paragraphs.join('\n\n');
  }
  if (letterCount(text) < 200) throw new TaskFailure('The page has no readable article text');
  const title = withoutSiteName((article?.title?.trim() || docTitle || firstLine(text)).replace(/[ \t\r\n]+/g, ' '), document);
  return { title, text, langTag };
}

// Class or id words of page furniture that Readability keeps when it sits inside the article element
// (newsletter boxes, share bars, comment threads) or that survive its scoring (cookie banners).
const CHROME = /^(cookies?|cookie-?(banner|consent|notice|bar)|consent|gdpr|cmp|newsletter|subscribe|subscription|signup|sign-up|share|sharing|share-?bar|social|related|related-?(posts|articles|stories)|recommended|promo|advert(isement)?|ads?|ad-?(slot|container|unit)|sponsor(ed)?|comments?|comment-?(list|section|form)|disqus|breadcrumbs?|paywall|popup|modal|tags|post-?tags|author-?bio)$/;

/** Removes page furniture by its class or id words before the article is looked for. */
function stripChrome(document: Doc): void {
  for (const el of Array.from(document.querySelectorAll('[class],[id]'))) {
    if (el.tagName === 'BODY' || el.tagName === 'HTML' || el.tagName === 'MAIN' || el.tagName === 'ARTICLE') continue;
    const words = `${el.getAttribute('class') ?? ''} ${el.getAttribute('id') ?? ''}`.toLowerCase().split(/\s+/).filter(Boolean);
    if (words.some((w) => CHROME.test(w) || w.includes('cookie') || w.includes('newsletter'))) el.remove();
  }
}

const SEPARATOR = /\s+[|\-–—·»/\\]\s+/;

/**
 * "Unicode HOWTO — Python 3.11.2 documentation" is spoken as "Unicode HOWTO": the part of a titled
 * page that is its site name (og:site_name, or not the article's own h1) is dropped.
 */
export function withoutSiteName(title: string, document: Doc): string {
  const parts = title.split(SEPARATOR).map((p) => p.trim()).filter(Boolean);
  if (parts.length < 2) return title;
  const norm = (x: string) => x.toLowerCase().replace(/\s+/g, ' ').trim();
  const site = norm(document.querySelector('meta[property="og:site_name"]')?.getAttribute('content') ?? '');
  const h1s = Array.from(document.querySelectorAll('h1')).map((h) => norm(h.textContent ?? '').replace(/[¶#]$/, '').trim());
  const keep = parts.filter((p) => norm(p) !== site);
  if (keep.length && keep.length < parts.length) return keep.join(' - ');
  // The h1 names the article, unless it is the site's logo: the article part is the longest one.
  const longest = [...parts].sort((a, b) => b.length - a.length)[0]!;
  if (h1s.includes(norm(longest))) return longest;
  // A documentation site's suffix names a product and version, never the page.
  const last = parts[parts.length - 1]!;
  if (/\b(documentation|docs|manual|wiki|blog|handbook)\b/i.test(last)) return parts.slice(0, -1).join(' - ');
  return title;
}

function metaTitle(document: Doc): string {
  const og = document.querySelector('meta[property="og:title"]')?.getAttribute('content');
  return (og || document.querySelector('title')?.textContent || '').trim();
}

export function firstLine(text: string): string {
  const line = (text.split('\n').find((l) => l.trim()) ?? '').replace(/^["“'«]+|["”'»]+$/g, '').trim();
  return line.length > 80 ? `${line.slice(0, 77).replace(/\s+\S*$/, '')}…` : line;
}
