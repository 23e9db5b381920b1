/** RSS 2.0 and Atom feeds: the channel title, then each item's title and content. */
import { cleanText, decodeEntities, domText } from './clean.js';
import { parseDocument } from './html.js';

export function looksLikeFeed(head: string): boolean {
  const start = head.replace(/^\ufeff/, '').replace(/<\?xml[^>]*\?>/, '').replace(/<!--[\s\S]*?-->/g, '').trimStart();
  return /^<(rss|rdf:RDF)[\s>]/i.test(start) || /^<feed[\s>][^>]*xmlns=["']http:\/\/www\.w3\.org\/2005\/Atom/i.test(start);
}

/** Contents of the first matching tag (namespace prefixes allowed), CDATA unwrapped. */
function field(xml: string, names: string[]): string | null {
  for (const name of names) {
    const m = new RegExp(`<(?:[\\w-]+:)?${name}(?:\\s[^>]*)?>([\\s\\S]*?)</(?:[\\w-]+:)?${name}>`, 'i').exec(xml);
    if (m && m[1]!.trim()) {
      const raw = m[1]!.replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, '$1');
      // Entity-escaped HTML is the RSS norm: decode once, then strip the markup.
      const html = raw.includes('<') ? raw : decodeEntities(raw);
      return domText(parseDocument(`<html><body>${html}</body></html>`).body as never).trim();
    }
  }
  return null;
}

export function extractFeed(xml: string): { title: string; text: string; language: string | null } {
  const items = xml.match(/<(item|entry)[\s>][\s\S]*?<\/\1>/gi) ?? [];
  const head = xml.slice(0, xml.search(/<(item|entry)[\s>]/i) >>> 0);
  const title = field(head, ['title']) ?? '';
  const blocks: string[] = [];
  for (const item of items) {
    const t = field(item, ['title']);
    // content:encoded is the full post; description/summary is the teaser.
    const body = field(item, ['encoded', 'content', 'description', 'summary']);
    const block = [t, body].filter(Boolean).join('\n\n');
    if (block) blocks.push(block);
  }
  return { title, text: cleanText(blocks.join('\n\n')), language: field(head, ['language']) };
}
