// Engine threads start here when Soundry runs from its TypeScript sources (npm start, vitest; thread-pool.ts).
// Node 20 does not apply the `--import tsx` of a worker's execArgv to the worker's own module loading (measured on
// 20.20: "Unknown file extension .ts" for every engine thread), so tsx is registered here, inside the thread,
// before the TypeScript entry is imported. Built code (dist/) starts from engine-thread.js and never loads this.
import { register } from 'tsx/esm/api';

register();
const entry = await import('./engine-thread.ts');
export default entry.default;
