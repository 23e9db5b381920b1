/**
 * What a mirror actually sent for a model file, in words a site operator can act on. Found from outside: a mirror
 * that answered 200 with a login or error page was reported only as "checksum mismatch", which reads like a damaged
 * model, not like a mirror that wants a password or has no such file.
 */

/** How many leading bytes are kept to recognise a page (a doctype or an <html> tag comes first, after whitespace). */
const HEAD_BYTES = 256;

export class MirrorAnswer {
  private head = Buffer.alloc(0);

  constructor(readonly url: string, private readonly contentType: string | null) {}

  /** Sees every chunk of the body in order; only the first bytes are kept. */
  see(chunk: Uint8Array): void {
    if (this.head.length >= HEAD_BYTES) return;
    this.head = Buffer.concat([this.head, Buffer.from(chunk.subarray(0, HEAD_BYTES - this.head.length))]);
  }

  /** Why this answer is an HTML page (its Content-Type, or how it begins), or null when nothing says so. */
  htmlEvidence(): string | null {
    const type = this.contentType?.split(';')[0]?.trim().toLowerCase();
    if (type === 'text/html' || type === 'application/xhtml+xml') return `Content-Type ${this.contentType}`;
    // A model file never begins like this; a mirror that labels its pages application/octet-stream still sends them.
    const text = this.head.toString('latin1').replace(/^\xEF\xBB\xBF/, '').trimStart();
    const start = /^<!doctype html|^<html[\s>]/i.exec(text);
    return start ? `it begins with ${start[0].trim()}` : null;
  }

  isHtml(): boolean {
    return this.htmlEvidence() !== null;
  }

  /** The sentence that names an HTML answer, or '' (appended to a refusal). */
  htmlNote(filePath: string): string {
    const evidence = this.htmlEvidence();
    return evidence ? `the mirror served an HTML page (${evidence}) rather than the model file ${filePath}` : '';
  }
}

/** "N bytes received, the catalogue's <file> is M bytes", with the resumed share when a part was continued. */
export function sizeNote(filePath: string, receivedBytes: number, expectedBytes: number, resumedFrom = 0): string {
  const resumed = resumedFrom > 0 ? ` (${resumedFrom} of them from the earlier part)` : '';
  return `${receivedBytes} bytes received${resumed}, the catalogue's ${filePath} is ${expectedBytes} bytes`;
}

/** What came instead of the file: its size against the catalogue's, and whether it was an HTML page. */
export interface WrongBody {
  url: string;
  receivedBytes: number;
  expectedBytes: number;
  /** Bytes of the total that an earlier part supplied (a resumed download). */
  resumedFrom?: number;
  /** MirrorAnswer.htmlNote: empty when the answer was not a page. */
  html: string;
}

export class ChecksumMismatchError extends Error {
  constructor(
    readonly file: string,
    readonly algorithm: 'sha256' | 'md5',
    readonly expected: string,
    readonly actual: string,
    readonly body?: WrongBody,
  ) {
    // A digest alone read like a damaged model; a login or error page answered with 200 says so, with the sizes.
    const sizes = body ? sizeNote(file, body.receivedBytes, body.expectedBytes, body.resumedFrom) : '';
    super(
      body?.html
        ? `download of ${body.url} refused: ${body.html}: ${sizes} (checksum mismatch); the download was discarded`
        : `checksum mismatch for ${file}: expected ${algorithm} ${expected}, got ${actual}${body ? ` (${sizes}, from ${body.url})` : ''}; the download was discarded`,
    );
  }
}
