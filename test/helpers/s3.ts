import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/**
 * s3rver in-process on a free loopback port (the OS picks it), over a temp directory, with one fresh bucket.
 * What s3rver does and does not do (checked against s3rver 3.7.1, see the blob contract):
 * - GetObject Range, HeadObject, multipart upload (create, parts, complete), DeleteObjects,
 *   ListObjectsV2 (one page; see pagination below), Content-Type kept: supported.
 * - AbortMultipartUpload: answered 405 MethodNotAllowed, so an aborted upload's parts stay on its
 *   disk (`pendingMultipartUploads` counts them); ListMultipartUploads: 501 NotImplemented.
 * - Presigned (SigV4 query) URLs: expiry is checked (403 AccessDenied "Request has expired"), the
 *   signature itself is NOT verified (a tampered URL is served), nor is it for signed headers.
 *   Requests without any signature are served too: it is not a security reference.
 * - Paginated listings (ListObjectsV2 with IsTruncated): its continuation tokens are encrypted with
 *   DES, which OpenSSL 3 (Node 17+) only offers with --openssl-legacy-provider; inside a normal
 *   test process the second page answers 500. `startS3({ legacyProvider: true })` runs it in a
 *   child process with that flag, for the pagination tests only.
 * - Range `bytes=0-0` is answered with the whole object (it reads end 0 as "no end"); suffix ranges
 *   (`bytes=-N`) are misread too. The S3 store slices what it gets (ByteSlice), and only sends
 *   explicit `start-end` ranges.
 * - Listing order: a depth-first walk of its directories, so `a-b/x` comes after `a/y` (S3 sorts
 *   by key bytes, `-` before `/`); pages split on such keys can skip objects. Tests use names
 *   where both orders agree.
 */
export interface TestS3 {
  endpoint: string;
  bucket: string;
  /** Variables for loadConfig / startTestApp that point Soundry at this bucket. */
  env: Record<string, string>;
  /** A client like the one the container builds (path-style, s3rver's fixed credentials). */
  client(): S3Client;
  /** Multipart uploads started and neither completed nor aborted (read from s3rver's directory). */
  pendingMultipartUploads(): Promise<number>;
  close(): Promise<void>;
}

/** Starts s3rver in this process; returns its port and how to stop it. */
async function inProcess(dir: string, bucket: string): Promise<{ port: number; stop(): Promise<void> }> {
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  return { port, stop: () => server.close() };
}

/** Starts s3rver in a child Node with the OpenSSL legacy provider (DES continuation tokens). */
async function inChild(dir: string, bucket: string): Promise<{ port: number; stop(): Promise<void> }> {
  const script = fileURLToPath(new URL('./s3rver-child.mjs', import.meta.url));
  const child = spawn(process.execPath, ['--openssl-legacy-provider', script, dir, bucket], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`s3rver child exited (${code}) before listening`)));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const m = /PORT (\d+)\n/.exec(out);
      if (m) resolve(Number(m[1]));
    });
  });
  return {
    port,
    async stop() {
      const exited = once(child, 'exit');
      child.stdin.end();
      await exited;
    },
  };
}

export async function startS3(opts: { legacyProvider?: boolean } = {}): Promise<TestS3> {
  const dir = await mkdtemp(join(tmpdir(), 'soundry-s3rver-'));
  const bucket = `soundry-${randomBytes(4).toString('hex')}`;
  const server = await (opts.legacyProvider ? inChild : inProcess)(dir, bucket);
  const { port } = server;
  const endpoint = `http://127.0.0.1:${port}`;
  const clients: S3Client[] = [];
  return {
    endpoint,
    bucket,
    env: {
      BLOB_STORE: 's3',
      S3_ENDPOINT: endpoint,
      S3_BUCKET: bucket,
      S3_REGION: 'us-east-1',
      // s3rver's built-in account.
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_FORCE_PATH_STYLE: '1',
    },
    client() {
      const client = new S3Client({
        region: 'us-east-1',
        endpoint,
        forcePathStyle: true,
        credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      });
      clients.push(client);
      return client;
    },
    async pendingMultipartUploads() {
      // s3rver keeps each multipart upload in <dir>/<bucket>/._S3rver_uploads/<uploadId>/.
      return (await readdir(join(dir, bucket, '._S3rver_uploads')).catch(() => [])).length;
    },
    async close() {
      for (const c of clients) c.destroy();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
