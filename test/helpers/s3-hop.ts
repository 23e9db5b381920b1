import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SheddingHop {
  /** The endpoint to give Soundry or an S3 client instead of the store's own. */
  endpoint: string;
  /** While true, every request is answered 503 SlowDown, as S3 does when it sheds load. */
  shedding: boolean;
  close(): Promise<void>;
}

/** A real HTTP hop in front of an S3 endpoint (s3rver) that can answer 503 SlowDown on demand, the store untouched. */
export async function startSheddingHop(target: string): Promise<SheddingHop> {
  const to = new URL(target);
  const hop: SheddingHop = { endpoint: '', shedding: false, close: async () => undefined };
  const server = createServer((req, res) => {
    if (hop.shedding) {
      req.resume();
      res.writeHead(503, { 'content-type': 'application/xml' }).end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
      return;
    }
    const upstream = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hop.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  hop.close = () => new Promise((resolve) => server.close(() => resolve()));
  return hop;
}
