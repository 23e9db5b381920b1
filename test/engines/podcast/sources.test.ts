import { createServer, type Server } from 'node:http';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import JSZip from 'jszip';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskFailure } from '../../../src/domain/errors.js';
import { sniffMediaType } from '../../../src/media/sniff.js';
import { detectLanguage, extractSource, extractVideoCaptions } from '../../../src/engines/podcast/sources.js';

const CORPUS = new URL('../../../../shared/corpus/podcast_sources/', import.meta.url).pathname;
const hasCorpus = existsSync(CORPUS);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'podcast-src-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function extractBytes(name: string, bytes: Buffer | string, contentType: string | null = null) {
  const path = join(dir, name);
  await writeFile(path, bytes);
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
  return extractSource({ path, sniffed: sniffMediaType(buf.subarray(0, 4096)), contentType, url: `https://example.com/${name}` });
}

const PARA = 'The committee met on Tuesday to discuss the new library building and its opening hours for students. ';

describe('playlists are refused as sources, never read as text', () => {
  const M3U = '#EXTM3U\n#EXTINF:-1,Radio One\nhttp://example.com/live.mp3\n';
  it.each([
    ['live.m3u8', '#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\nseg0.ts\n#EXT-X-ENDLIST\n', null, /playlist \(HLS\)/],
    ['radio.txt', M3U, 'text/plain', /playlist \(M3U\)/],
    ['list.ffconcat', 'ffconcat version 1.0\nfile a.wav\nfile b.wav\n', null, /playlist \(FFCONCAT\)/],
    ['radio.pls', '[playlist]\nFile1=http://example.com/stream\nTitle1=Radio\nNumberOfEntries=1\nVersion=2\n', null, /playlist \(PLS\)/],
    ['mix.xspf', '<?xml version="1.0"?><playlist version="1" xmlns="http://xspf.org/ns/0/"><trackList><track><location>http://example.com/a.ogg</location></track></trackList></playlist>', null, /playlist \(XSPF\)/],
    // A plain M3U is only a list of paths: known by its extension, or by its declared type.
    ['plain.m3u', 'music/one.mp3\nmusic/two.mp3\nhttp://example.com/three.mp3\n', null, /playlist \(M3U\)/],
    ['stream', 'http://example.com/a.mp3\nhttp://example.com/b.mp3\n', 'audio/x-mpegurl', /playlist \(by its content type\)/],
    // Not UTF-8 (a Latin-1 track name): still a playlist by its first bytes.
    ['latin1', Buffer.from('#EXTM3U\n#EXTINF:1,Caf\xe9 del Mar\nhttp://example.com/a.mp3\n', 'latin1'), null, /playlist \(M3U\)/],
    // UTF-16 with its byte-order mark, as Windows tools save it: FF FE then "#" read as an MP3 frame header.
    ['utf16le.m3u8.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('#EXTM3U\n#EXTINF:1,One\nhttp://example.com/a.mp3\n', 'utf16le')]), null, /playlist \(M3U\)/],
    ['utf16be', Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from('[playlist]\nFile1=http://example.com/a\n', 'utf16le').swap16()]), null, /playlist \(PLS\)/],
  ] as const)('%s', async (name, body, contentType, message) => {
    const p = extractBytes(name, body, contentType);
    await expect(p).rejects.toBeInstanceOf(TaskFailure);
    await expect(p).rejects.toThrow(message);
    await expect(p).rejects.toThrow(/Give a page, a document or a media file/);
  });

  it('a caption track that is a playlist is skipped, not read as the transcript', async () => {
    const page = join(dir, 'watch.html');
    const player = { captions: { playerCaptionsTracklistRenderer: { captionTracks: [{ baseUrl: 'https://example.com/hls', languageCode: 'en' }] } } };
    await writeFile(page, `<html><body><script>var ytInitialPlayerResponse = ${JSON.stringify(player)};</script></body></html>`);
    const hls = '#EXTM3U\n#EXT-X-TARGETDURATION:6\n' + Array.from({ length: 20 }, (_, i) => `#EXTINF:6.0,\nhttps://example.com/captions/segment-number-${i}.vtt\n`).join('');
    expect(await extractVideoCaptions(page, 'https://example.com/watch', async () => hls)).toBeNull();
  });
});

describe('extractSource on generated fixtures', () => {
  it('HTML article: Readability content and title, chrome dropped', async () => {
    const html = `<!doctype html><html lang="en"><head><title>Library news - Town Site</title></head><body>
      <nav><a href="/">Home</a><a href="/about">About</a></nav>
      <article><h1>New library opens</h1>${[1, 2, 3, 4].map((i) => `<p>${PARA}Paragraph ${i} adds detail.</p>`).join('')}</article>
      <footer>Copyright 2024 Town</footer></body></html>`;
    const r = await extractBytes('page.html', html);
    expect(r.kind).toBe('html');
    expect(r.language).toBe('en');
    expect(r.text).toContain('Paragraph 4 adds detail.');
    expect(r.text).not.toContain('Copyright');
    expect(r.title).toMatch(/library/i);
  });

  it('HTML without article text fails with a clear message', async () => {
    await expect(extractBytes('empty.html', '<html><body><nav><a href="/">Home</a></nav></body></html>')).rejects.toThrow(/no readable article text/i);
  });

  it('DOCX, PPTX, XLSX and EPUB built with jszip', async () => {
    const docx = new JSZip();
    docx.file('[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>');
    docx.file('_rels/.rels', '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>');
    docx.file('word/document.xml', `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Quarterly report</w:t></w:r></w:p>${[1, 2, 3].map((i) => `<w:p><w:r><w:t>${PARA}Word paragraph ${i}.</w:t></w:r></w:p>`).join('')}</w:body></w:document>`);
    const d = await extractBytes('report.docx', await docx.generateAsync({ type: 'nodebuffer' }));
    expect(d.kind).toBe('docx');
    expect(d.title).toBe('Quarterly report');
    expect(d.text).toContain('Word paragraph 3.');

    const pptx = new JSZip();
    pptx.file('[Content_Types].xml', '<Types/>');
    const slide = (t: string) => `<p:sld xmlns:a="a" xmlns:p="p"><p:txBody><a:p><a:r><a:t>${t}</a:t></a:r></a:p><a:p><a:r><a:t>${PARA}</a:t></a:r></a:p></p:txBody></p:sld>`;
    pptx.file('ppt/slides/slide10.xml', slide('Tenth slide'));
    pptx.file('ppt/slides/slide2.xml', slide('Second slide'));
    pptx.file('ppt/slides/slide1.xml', slide('Deck title'));
    const p = await extractBytes('deck.pptx', await pptx.generateAsync({ type: 'nodebuffer' }));
    expect(p.kind).toBe('pptx');
    expect(p.title).toBe('Deck title');
    expect(p.text.indexOf('Second slide')).toBeLessThan(p.text.indexOf('Tenth slide'));

    const epub = new JSZip();
    epub.file('mimetype', 'application/epub+zip', { compression: 'STORE' });
    epub.file('META-INF/container.xml', '<container><rootfiles><rootfile full-path="OEBPS/content.opf"/></rootfiles></container>');
    epub.file('OEBPS/content.opf', '<package><metadata><dc:title>My Book</dc:title><dc:language>en</dc:language></metadata><manifest><item id="c2" href="ch2.xhtml"/><item id="c1" href="ch1.xhtml"/></manifest><spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>');
    epub.file('OEBPS/ch1.xhtml', `<html><body><h1>Chapter One</h1><p>${PARA}</p></body></html>`);
    epub.file('OEBPS/ch2.xhtml', `<html><body><h1>Chapter Two</h1><p>${PARA}</p></body></html>`);
    const e = await extractBytes('book.epub', await epub.generateAsync({ type: 'nodebuffer' }));
    expect(e.kind).toBe('epub');
    expect(e.title).toBe('My Book');
    expect(e.text.indexOf('Chapter One')).toBeLessThan(e.text.indexOf('Chapter Two'));
  });

  it('Markdown, plain text, captions and RSS', async () => {
    const md = await extractBytes('notes.md', `# Garden notes\n\nSome **bold** advice and a [link](https://x.y).\n\n- ${PARA}\n\n\`\`\`js\nconsole.log(1)\n\`\`\`\n`);
    expect(md.kind).toBe('markdown');
    expect(md.title).toBe('Garden notes');
    expect(md.text).toContain('Some bold advice and a link.');
    expect(md.text).not.toContain('console.log');

    const txt = await extractBytes('plain.txt', `Town meeting\n\n${PARA.repeat(3)}`);
    expect(txt.kind).toBe('text');
    expect(txt.title).toBe('Town meeting');

    const vtt = await extractBytes('talk.vtt', `WEBVTT\n\n00:00:01.000 --> 00:00:03.000\nHello and welcome to the talk about libraries.\n\n00:00:03.000 --> 00:00:06.000\n${PARA}\n`);
    expect(vtt.kind).toBe('captions');
    expect(vtt.text).not.toContain('-->');

    const rss = `<?xml version="1.0"?><rss version="2.0"><channel><title>Town Feed</title><language>en</language>
      <item><title>First post</title><description>&lt;p&gt;${PARA}&lt;/p&gt;</description></item>
      <item><title>Second post</title><description><![CDATA[<p>${PARA}</p>]]></description></item></channel></rss>`;
    const f = await extractBytes('feed.xml', rss);
    expect(f.kind).toBe('rss');
    expect(f.title).toBe('Town Feed');
    expect(f.text).toContain('Second post');
    expect(f.text).not.toContain('<p>');
  });

  it('caps text at maxChars on a sentence boundary', async () => {
    const path = join(dir, 'long.txt');
    await writeFile(path, PARA.repeat(200));
    const r = await extractSource({ path, sniffed: { kind: 'text', format: 'plain' }, contentType: null, url: null }, { maxChars: 1000 });
    expect(r.text.length).toBeLessThanOrEqual(1000);
    expect(r.text.endsWith('.')).toBe(true);
  });

  it('refuses audio and empty input with TaskFailure', async () => {
    const path = join(dir, 'x.bin');
    await writeFile(path, 'ID3');
    await expect(extractSource({ path, sniffed: { kind: 'audio', format: 'mp3' }, contentType: null, url: null })).rejects.toBeInstanceOf(TaskFailure);
    await expect(extractBytes('blank.txt', '   \n\n  ')).rejects.toThrow(/no usable text/);
  });
});

describe('legacy charsets, XHTML and page furniture (real-site shapes)', () => {
  // "软件包管理系统是 Debian 最重要的部分之一。它可以从网络上的档案库中安装软件，并自动处理依赖关系。" in GBK and "Пакетная система Debian позволяет устанавливать программы из архива и автоматически учитывает зависимости между пакетами." in windows-1251: no UTF-8 anywhere in these pages.
  const GBK_SENTENCE = Buffer.from('c8edbcfeb0fcb9dcc0edcfb5cdb3cac72044656269616e20d7eed6d8d2aab5c4b2bfb7d6d6aed2bba1a3cbfcbfc9d2d4b4d3cdf8c2e7c9cfb5c4b5b5b0b8bfe2d6d0b0b2d7b0c8edbcfea3acb2a2d7d4b6afb4a6c0edd2c0c0b5b9d8cfb5a1a3', 'hex');
  const GBK_TITLE = Buffer.from('c8edbcfeb0fcb9dcc0edc8ebc3c5', 'hex');
  const CP1251_SENTENCE = Buffer.from('cfe0eae5f2ede0ff20f1e8f1f2e5ece02044656269616e20efeee7e2eeebffe5f220f3f1f2e0ede0e2ebe8e2e0f2fc20eff0eee3f0e0ececfb20e8e720e0f0f5e8e2e020e820e0e2f2eeece0f2e8f7e5f1eae820f3f7e8f2fbe2e0e5f220e7e0e2e8f1e8eceef1f2e820ece5e6e4f320efe0eae5f2e0ece82e20', 'hex');
  // Numbered so that no paragraph is an exact repeat (repeated short lines count as page furniture).
  const para = (b: Buffer, n: number) => Buffer.concat(Array.from({ length: n }, (_, i) => Buffer.concat([Buffer.from('<p>'), b, b, Buffer.from(` (${i + 1})</p>`)])));

  it('a GBK page declared in <meta> is decoded, not refused as an unknown format', async () => {
    const page = Buffer.concat([
      Buffer.from('<!DOCTYPE html><html lang="zh-CN"><head><meta http-equiv="Content-Type" content="text/html; charset=gb2312"><title>'),
      GBK_TITLE,
      Buffer.from('</title></head><body><nav><a href="/">Home</a></nav><article><h1>'),
      GBK_TITLE,
      Buffer.from('</h1>'),
      para(GBK_SENTENCE, 6),
      Buffer.from('</article></body></html>'),
    ]);
    expect(sniffMediaType(page.subarray(0, 4096)).kind).toBe('unknown');
    const r = await extractBytes('gbk.html', page);
    expect(r.kind).toBe('html');
    expect(r.language).toBe('zh');
    expect(r.title).toBe('软件包管理入门');
    expect(r.text).toContain('档案库');
  });

  it('text and pages saved as UTF-16 with a byte-order mark are read, not taken for MP3 audio', async () => {
    const utf16le = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const utf16be = (text: string) => Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, 'utf16le').swap16()]);
    const txt = await extractBytes('notepad.txt', utf16le(`Town meeting\r\n\r\n${PARA.repeat(3)}Café prices rose.`));
    expect(txt.kind).toBe('text');
    expect(txt.title).toBe('Town meeting');
    expect(txt.text).toContain('Café prices rose.');
    const md = await extractBytes('notes.md', utf16be(`# Garden notes\n\n${PARA}`));
    expect(md.kind).toBe('markdown');
    expect(md.title).toBe('Garden notes');
    // A page declaring another charset: the byte-order mark decides (WHATWG).
    const page = await extractBytes('page.html', utf16le(`<html><head><title>Library hours</title></head><body><article><p>${PARA.repeat(4)}</p></article></body></html>`), 'text/html; charset=iso-8859-1');
    expect(page.kind).toBe('html');
    expect(page.text).toContain('The committee met on Tuesday');
  });

  it('a windows-1251 page whose charset is only in the Content-Type header', async () => {
    const page = Buffer.concat([Buffer.from('<html><head><title>Debian</title></head><body><article>'), para(CP1251_SENTENCE, 6), Buffer.from('</article></body></html>')]);
    const r = await extractBytes('ru.html', page, 'text/html; charset=windows-1251');
    expect(r.language).toBe('ru');
    expect(r.text).toContain('Пакетная система Debian');
  });

  it('an XHTML page with an XML declaration is read as HTML (no markup spoken, real title)', async () => {
    const body = Array.from({ length: 6 }, () => `<p>The <code class="literal">apt</code> command installs packages from the archive and resolves their dependencies automatically for you.</p>`).join('');
    const xhtml = `<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter 2. Package management</title></head><body><div class="chapter">${body}</div></body></html>`;
    const r = await extractBytes('ch02.html', xhtml);
    expect(r.kind).toBe('html');
    expect(r.title).toBe('Chapter 2. Package management');
    expect(r.text).not.toMatch(/<code|<\?xml/);
    expect(r.text).toContain('The apt command installs packages');
  });

  it('newsletter boxes, cookie banners and comments inside the article are dropped; the site name leaves the title', async () => {
    const html = `<!doctype html><html lang="en"><head><title>New library opens | Town Site</title><meta property="og:site_name" content="Town Site"></head><body>
      <div class="cookie-banner"><p>We use cookies to improve your experience on our website and to show you relevant advertising.</p></div>
      <article><h1>New library opens</h1>${[1, 2, 3, 4].map((i) => `<p>${PARA}Paragraph ${i} adds detail.</p>`).join('')}
      <div class="newsletter"><h3>Subscribe to our newsletter</h3><p>Get the best stories delivered to your inbox every morning, sign up now.</p></div>
      <section id="comments"><p>Great article, I have been waiting for this library for years and years now!</p></section></article></body></html>`;
    const r = await extractBytes('furniture.html', html);
    expect(r.text).toContain('Paragraph 4 adds detail.');
    expect(r.text).not.toMatch(/newsletter|inbox|cookies|waiting for this library/i);
    expect(r.title).toBe('New library opens');
  });

  it('a documentation suffix leaves the title', async () => {
    const html = `<html><head><title>Unicode HOWTO — Python 3.11.2 documentation</title></head><body><div class="body"><h1>Unicode HOWTO</h1>${[1, 2, 3, 4].map((i) => `<p>${PARA}Paragraph ${i}.</p>`).join('')}</div></body></html>`;
    expect((await extractBytes('unicode.html', html)).title).toBe('Unicode HOWTO');
  });
});

describe('detectLanguage', () => {
  it.each([
    ['en', 'The weather was lovely yesterday, so we walked along the river to the old mill.'],
    ['de', 'Gestern war das Wetter schön, also sind wir am Fluss entlang zur alten Mühle gegangen.'],
    ['fr', 'Hier, il faisait beau, alors nous avons marché le long de la rivière jusqu’au vieux moulin.'],
    ['es', 'Ayer hizo buen tiempo, así que caminamos por el río hasta el viejo molino.'],
    ['pt', 'Ontem o tempo estava ótimo, então caminhamos pelo rio até o velho moinho.'],
    ['ru', 'Вчера была хорошая погода, и мы гуляли вдоль реки до старой мельницы.'],
    ['ar', 'كان الطقس جميلاً أمس، فمشينا على طول النهر حتى الطاحونة القديمة.'],
    ['zh', '昨天天气很好，所以我们沿着河边走到了老磨坊。'],
    ['zh_yue', '尋日天氣好好，所以我哋沿住河邊行咗去舊磨坊，佢話唔係好遠。'],
    ['ja', '昨日は天気が良かったので、川沿いを古い水車小屋まで歩きました。'],
    ['ko', '어제는 날씨가 좋아서 강을 따라 오래된 방앗간까지 걸었습니다.'],
  ])('%s', (lang, text) => expect(detectLanguage(text)).toBe(lang));

  it('a Russian manual opening with an English licence paragraph is Russian', () => {
    const licence = 'This document may be used under the terms of the GNU General Public License version 2 or higher. '.repeat(4);
    expect(detectLanguage(`${licence}\n\n${`Руководство начинающего разработчика Debian описывает, как собрать пакет из исходного кода программы и отправить его в архив. `.repeat(4)}`)).toBe('ru');
  });

  it('a Japanese manual full of command names is Japanese', () => {
    const text = 'パッケージのインストールと削除には apt-get install や apt-get remove --purge を使い、設定は /etc/apt/sources.list に書きます。'.repeat(3);
    expect(detectLanguage(text)).toBe('ja');
  });

  it('returns null for languages outside the spec list', () => {
    expect(detectLanguage('Včera bylo hezky, a tak jsme se prošli podél řeky až ke starému mlýnu a zpátky domů.')).toBeNull();
  });
});

describe('extractVideoCaptions', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url?.startsWith('/timedtext')) {
        res.end(`<?xml version="1.0"?><transcript><text start="0" dur="2">Welcome to the channel.</text><text start="2" dur="3">Today we explain how bridges carry heavy loads &amp;amp; why arches work.</text><text start="5" dur="3">Stone arches push their weight outwards into the ground.</text></transcript>`);
      } else if (req.url === '/subs.vtt') {
        res.end(`WEBVTT\n\n00:00.000 --> 00:02.000\nThis lecture covers the history of printing presses in Europe.\n\n00:02.000 --> 00:04.000\nGutenberg combined movable type with an oil-based ink.\n`);
      } else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  const fetchText = async (url: string) => {
    const res = await fetch(url);
    if (!res.ok) throw new Error(String(res.status));
    return res.text();
  };

  it('reads captionTracks from a YouTube-like player response', async () => {
    const player = { videoDetails: { title: 'How bridges work' }, captions: { playerCaptionsTracklistRenderer: { captionTracks: [
      { baseUrl: `${base}/missing?v=1`, languageCode: 'en', kind: 'asr' },
      { baseUrl: `${base}/timedtext?v=1\u0026lang=en`, languageCode: 'en' },
    ] } } };
    const path = join(dir, 'video.html');
    await writeFile(path, `<html><head><title>How bridges work - YouTube</title></head><body><script>var ytInitialPlayerResponse = ${JSON.stringify(player)};</script></body></html>`);
    const r = await extractVideoCaptions(path, 'https://video.example/watch?v=1', fetchText);
    expect(r).not.toBeNull();
    expect(r!.kind).toBe('captions');
    expect(r!.title).toBe('How bridges work');
    expect(r!.text).toContain('heavy loads & why arches work');
    expect(r!.language).toBe('en');
  });

  it('reads <track kind="captions"> WebVTT, and returns null without tracks', async () => {
    const path = join(dir, 'plain-video.html');
    await writeFile(path, `<html><head><title>Printing</title></head><body><video><track kind="captions" src="/subs.vtt" srclang="en"></video></body></html>`);
    const r = await extractVideoCaptions(path, `${base}/page`, fetchText);
    expect(r?.text).toContain('Gutenberg combined movable type');
    const none = join(dir, 'none.html');
    await writeFile(none, '<html><body><video src="a.mp4"></video></body></html>');
    expect(await extractVideoCaptions(none, `${base}/page`, fetchText)).toBeNull();
  });
});

describe.skipIf(!hasCorpus)('corpus podcast_sources', () => {
  const files = hasCorpus
    ? readdirSync(CORPUS).flatMap((d) => readdirSync(join(CORPUS, d)).filter((f) => !f.endsWith('.json')).map((f) => join(CORPUS, d, f)))
    : [];
  it.each(files)('%s extracts real text', async (path) => {
    const bytes = readFileSync(path);
    const r = await extractSource({ path, sniffed: sniffMediaType(bytes.subarray(0, 4096)), contentType: null, url: null });
    expect(r.text.length).toBeGreaterThan(100);
    expect(r.title.length).toBeGreaterThan(0);
    const metaPath = path.replace(/\.html$/, '.meta.json');
    if (metaPath !== path && existsSync(metaPath)) {
      const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as { title: string; lang: string | null };
      expect(r.title).toBe(meta.title);
      const expected = meta.lang ? ({ 'pt-br': 'pt', 'en-us': 'en' } as Record<string, string>)[meta.lang.toLowerCase()] ?? meta.lang.split('-')[0] : null;
      if (expected && ['en', 'de', 'es', 'pt', 'ja', 'fr', 'ru'].includes(expected)) expect(r.language).toBe(expected);
    }
  });
});
