// s3rver in its own process, for the one thing it cannot do inside ours (see test/helpers/s3.ts):
// paginated listings. Its continuation tokens are DES-encrypted, and Node 17+ only has DES with
// --openssl-legacy-provider. Usage: node --openssl-legacy-provider s3rver-child.mjs <dir> <bucket>
import S3rver from 's3rver';

const [dir, bucket] = process.argv.slice(2);
const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: bucket }] });
const { port } = await server.run();
process.stdout.write(`PORT ${port}\n`);
// The parent closes stdin to stop us, and so does its death: never outlive the test run.
process.stdin.resume();
process.stdin.on('end', () => server.close().finally(() => process.exit(0)));
