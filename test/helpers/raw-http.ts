import { connect } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers of a raw answer; the last value wins for repeated names (enough for these tests). */
function parseHead(head: string): { status: number; headers: Record<string, string> } {
  const [statusLine = '', ...lines] = head.split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? NaN);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return { status, headers };
}

/** The body of a chunked answer once its last chunk has arrived; null while incomplete. */
function dechunk(data: Buffer): Buffer | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size)) return Buffer.concat(parts);
    if (size === 0) return Buffer.concat(parts);
    if (data.length < eol + 2 + size + 2) return null;
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/**
 * Sends bytes as they are over a fresh TCP connection and reads the first answer: status, headers, body.
 * Resolves null when the server closed the connection without answering, or nothing came within
 * `timeoutMs`. `head`: the answer has no body whatever its content-length says. `endAfterWrite`: half-close
 * after the bytes, so a request cut short is answered rather than waited for.
 */
export function rawRequest(port: number, data: string | Buffer, opts: { timeoutMs?: number; head?: boolean; endAfterWrite?: boolean; host?: string } = {}): Promise<RawAnswer | null> {
  return new Promise((resolve) => {
    const socket = connect(port, opts.host ?? '127.0.0.1');
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (answer: RawAnswer | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const tryParse = (ended: boolean): void => {
      // Interim answers (100 Continue) come before the answer itself.
      while (/^HTTP\/1\.[01] 1\d\d /.test(buf.subarray(0, 13).toString('latin1')) && buf.indexOf('\r\n\r\n') >= 0) buf = buf.subarray(buf.indexOf('\r\n\r\n') + 4);
      const headEnd = buf.indexOf('\r\n\r\n');
      if (headEnd < 0) return ended ? finish(null) : undefined;
      const { status, headers } = parseHead(buf.subarray(0, headEnd).toString('latin1'));
      const rest = buf.subarray(headEnd + 4);
      if (opts.head || status === 204 || status === 304) return finish({ status, headers, body: '' });
      if (headers['content-length'] !== undefined) {
        const length = Number(headers['content-length']);
        if (rest.length >= length) return finish({ status, headers, body: rest.subarray(0, length).toString('utf8') });
      } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
        const body = dechunk(rest);
        if (body) return finish({ status, headers, body: body.toString('utf8') });
      }
      if (ended) finish({ status, headers, body: rest.toString('utf8') });
    };
    const timer = setTimeout(() => finish(null), opts.timeoutMs ?? 10_000);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      tryParse(false);
    });
    socket.on('end', () => tryParse(true));
    socket.on('close', () => tryParse(true));
    // A reset after the answer arrived still leaves the answer readable; without one, no answer.
    socket.on('error', () => tryParse(true));
    if (opts.endAfterWrite) socket.end(data);
    else socket.write(data);
  });
}

/** Whether a parsed JSON value is an envelope: numeric code, object data, string message. */
export function isEnvelope(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return typeof v.code === 'number' && v.data !== null && typeof v.data === 'object' && !Array.isArray(v.data) && typeof v.message === 'string';
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
