/**
 * Entry of a chunk worker (a worker thread an enhancement run starts; parallel-pool.ts): runs the chunked part
 * of the chain over one chunk at a time. The stages are built fresh for every chunk through the same buildStages
 * as the sequential chain, so no state crosses from one chunk to the next except through the lead-in the chunk
 * carries (src/engines/enhance/parallel.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { buildStages } from '../../engines/enhance/chain.js';
import { blocksOf, concatAudio, runChain } from '../../engines/enhance/stage.js';
import type { AudioData } from '../../media/audio.js';
import type { ChunkReply, ChunkRequest, ChunkWorkerInit } from './parallel-pool.js';

const init: ChunkWorkerInit = workerData;
const port = parentPort;
if (!port) throw new Error('parallel-worker.ts runs only as a worker thread');

async function runChunk(req: ChunkRequest): Promise<{ output: AudioData; engines: string[]; notes: Record<string, string> }> {
  // Never aborted from inside: the run that started this thread terminates it on abort.
  const signal = new AbortController().signal;
  const { stages, engines, notes } = await buildStages(init.plan, { ...init.stages, signal });
  const out: AudioData[] = [];
  await runChain(stages, blocksOf(req.input, init.blockFrames), async (b) => void out.push(b), { signal, onProgress: () => undefined });
  return { output: concatAudio(out, req.input.sampleRate, req.input.channels.length), engines, notes };
}

port.on('message', (req: ChunkRequest) => {
  runChunk(req).then(
    ({ output, engines, notes }) => {
      const reply: ChunkReply = { id: req.id, ok: true, output, engines, notes };
      port.postMessage(reply, output.channels.map((c) => c.buffer as ArrayBuffer));
    },
    (err: unknown) => {
      const reply: ChunkReply = { id: req.id, ok: false, error: err instanceof Error ? err.message : String(err) };
      port.postMessage(reply);
    },
  );
});
