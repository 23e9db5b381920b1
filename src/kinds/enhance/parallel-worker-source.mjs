// Chunk workers start here when Soundry runs from its TypeScript sources (npm start, vitest; parallel-pool.ts), as
// engine threads do (src/app/engine-thread-source.mjs): Node 20 does not apply `--import tsx` to a worker's own
// module loading, so tsx is registered inside the thread first. Built code starts from parallel-worker.js.
import { register } from 'tsx/esm/api';

register();
await import('./parallel-worker.ts');
