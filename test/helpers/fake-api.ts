import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for a Soundry server's routes on 127.0.0.1, for the client's failure paths a real server will not
 * show on demand: silence, a death mid-wait, a slow link. Each test gives it the routes it needs.
 */
export interface FakeApi {
  server: Server;
  base: string;
  /** Requests seen, as "METHOD /path", in order. */
  seen: string[];
  /** Stops listening and drops every connection: the next request is refused. */
  shutdown(): Promise<void>;
}

export type FakeRoute = (req: IncomingMessage, res: ServerResponse, api: FakeApi) => void;

/** The envelope of a successful answer (docs/api.md). */
export function answer(res: ServerResponse, data: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 100000, data, message: 'Request Success' }));
}

export async function startFakeApi(routes: Record<string, FakeRoute>, fallback?: FakeRoute): Promise<FakeApi> {
  const seen: string[] = [];
  const server = createServer();
  const api: FakeApi = {
    server,
    base: '',
    seen,
    shutdown: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    seen.push(`${req.method} ${path}`);
    const route = routes[path] ?? fallback;
    if (route) route(req, res, api);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  api.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return api;
}
