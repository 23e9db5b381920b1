import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * The web console (docs/console.md): plain ES modules and web components served as they are, no
 * build step, so `npm ci && npm start` is all it takes. Only the files present at start-up are
 * served (a fixed map, never a path joined from the request), so nothing outside public/ can be read.
 */
const PUBLIC_DIR = fileURLToPath(new URL('../../../public/', import.meta.url));
/** wavesurfer.js ships self-contained ES modules; served from node_modules instead of being copied. */
const WAVESURFER_DIR = fileURLToPath(new URL('../../../node_modules/wavesurfer.js/dist/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

function typeOf(name: string): string | undefined {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? undefined : TYPES[name.slice(dot)];
}

/**
 * Console file names (one flat folder, so a route parameter names them: no path ever has a slash) and the
 * files they are read from.
 */
function consoleFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(PUBLIC_DIR, { withFileTypes: true })) {
    if (entry.isFile() && typeOf(entry.name)) files.set(entry.name, `${PUBLIC_DIR}${entry.name}`);
  }
  files.set('wavesurfer.esm.js', `${WAVESURFER_DIR}wavesurfer.esm.js`);
  files.set('regions.esm.js', `${WAVESURFER_DIR}plugins/regions.esm.js`);
  return files;
}

export function registerConsoleRoutes(app: FastifyInstance): void {
  const files = consoleFiles();
  const send = async (name: string, reply: FastifyReply) => {
    const path = files.get(name);
    if (!path) return undefined;
    // no-cache: the browser revalidates, so a new release is picked up without a hard reload.
    return reply
      .header('content-type', typeOf(name) ?? 'application/octet-stream')
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      // Never inside another site's frame (clickjacking: the page holds an API key and buttons that spend credits);
      // X-Frame-Options for browsers without CSP frame-ancestors.
      .header('content-security-policy', "frame-ancestors 'none'")
      .header('x-frame-options', 'DENY')
      // Result links carry their signature in the query: not to be sent on to other origins.
      .header('referrer-policy', 'same-origin')
      .send(await readFile(path));
  };
  app.get('/', { schema: { hide: true } }, async (_request, reply) => send('index.html', reply));
  app.get<{ Params: { file: string } }>('/console/:file', { schema: { hide: true } }, async (request, reply) => {
    const sent = await send(request.params.file, reply);
    if (sent === undefined) return reply.callNotFound();
    return sent;
  });
}
