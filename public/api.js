// The console's only way to the server: the same public API any client uses, with the key the user entered.
const API = '/audio/api/v1/api-keys';
const KEY = 'soundry.apiKey';

export const apiKey = {
  get: () => localStorage.getItem(KEY) ?? '',
  set: (value) => (value ? localStorage.setItem(KEY, value) : localStorage.removeItem(KEY)),
};

/** Codes whose cause is the key itself: shown next to the API key field, wherever they happen. */
export const KEY_CODES = new Set([101002, 101005, 101006]);

/** Plain words for the API's codes; the server's own message is kept for the details it names. */
const PLAIN = {
  101002: 'This API key was not accepted. Check the key in the API key field.',
  101003: 'Too many requests for this key right now. Wait a moment and try again.',
  101004: 'This key already has as many tasks running as it may. Wait for one to finish.',
  101005: 'The account of this key is suspended. Contact the administrator.',
  101006: 'This API key is disabled. Contact the administrator.',
  100100: 'Not enough credits for this task. Ask the administrator to add credits.',
  101008: 'This task was not found: it may have expired.',
  100413: 'The file is too large for this server.',
  100503: 'The server is restarting. Try again in a few seconds.',
  100500: 'The server had a problem. Try again.',
};

export class ApiError extends Error {
  constructor(envelope) {
    super(envelope.message);
    this.code = envelope.code;
    // "Invalid parameters: text: required" -> field "text", problem "required".
    const m = /^Invalid parameters: ([A-Za-z_]+)[^:]*: (.*)$/s.exec(envelope.message ?? '');
    this.field = envelope.code === 100002 && m ? m[1] : envelope.code === 100003 ? 'text' : KEY_CODES.has(envelope.code) ? 'api-key' : null;
    this.problem = m ? m[2] : envelope.message;
  }

  get plain() {
    if (this.code === 100002) return `This value was not accepted: ${this.problem}.`;
    if (this.code === 100003) return `The text is too long. ${this.message.replace(/^Text exceeds the maximum length: /, 'It has ')}.`;
    return PLAIN[this.code] ?? this.message;
  }
}

async function envelopeOf(res) {
  try {
    return await res.json();
  } catch {
    return { code: res.status, message: `The server answered ${res.status} without an explanation.` };
  }
}

export async function call(method, path, body) {
  let res;
  try {
    res = await fetch(`${API}${path}`, {
      method,
      headers: { 'api-key': apiKey.get(), ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch {
    throw new ApiError({ code: 0, message: 'The server could not be reached. Check your connection.' });
  }
  const env = await envelopeOf(res);
  if (env.code !== 100000) throw new ApiError(env);
  return env.data;
}

/** Uploads a file and answers the signed link the create operations take as inputurl. */
export async function upload(file) {
  const form = new FormData();
  form.append('file', file, file.name);
  const res = await fetch(`${API}/files/upload`, { method: 'POST', headers: { 'api-key': apiKey.get() }, body: form });
  const env = await envelopeOf(res);
  if (env.code !== 100000) throw new ApiError(env);
  return env.data.url;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls a query operation until the task leaves waiting; onUpdate sees every answer (progress, queue position). */
export async function poll(path, idField, id, onUpdate = () => {}) {
  for (let delay = 300; ; delay = Math.min(2000, delay * 1.3)) {
    let data;
    try {
      data = await call('POST', path, { [idField]: id });
    } catch (err) {
      // Over the key's rate or in-flight limit (other tabs, the history page): wait and ask again, the task goes on.
      if (err.code === 101003 || err.code === 101004) {
        await sleep(1000);
        continue;
      }
      throw err;
    }
    onUpdate(data);
    if (data.status !== 'waiting') return data;
    await sleep(delay);
  }
}

/** The create and query paths of each kind, and the id each query takes (the spec mixes job_id and global_id). */
export const KINDS = {
  tts: { label: 'Text to speech', create: '/tts/task/create', get: '/tts/task/get', idField: 'global_id', createdId: 'job_id' },
  separation: { label: 'Separation', create: '/separation/task/create', get: '/separation/task/get', idField: 'job_id', createdId: 'job_id' },
  enhance: { label: 'Enhancement', create: '/enhance/task/create', get: '/enhance/task/get', idField: 'job_id', createdId: 'job_id' },
  podcast_script: { label: 'Podcast script', create: '/podcast/script/create', get: '/podcast/script/get', idField: 'global_id', createdId: 'global_id' },
  podcast_audio: { label: 'Podcast episode', create: '/podcast/audio/create', get: '/podcast/audio/get', idField: 'global_id', createdId: 'global_id' },
};

const HISTORY_MAX = 200;
/** History is kept per key in this browser (docs/api.md, Web console): the API lists no tasks. */
const historyKey = () => `soundry.history.${apiKey.get().slice(0, 11)}`;

export const history = {
  list: () => {
    try {
      return JSON.parse(localStorage.getItem(historyKey()) ?? '[]');
    } catch {
      return [];
    }
  },
  add(kind, id, summary) {
    const items = [{ kind, id, summary, created: Date.now() }, ...history.list()].slice(0, HISTORY_MAX);
    localStorage.setItem(historyKey(), JSON.stringify(items));
    document.dispatchEvent(new CustomEvent('sd-history'));
  },
};

/** Creates a task and writes it to the history; answers the id. */
export async function createTask(kind, body, summary) {
  const data = await call('POST', KINDS[kind].create, body);
  const id = data[KINDS[kind].createdId];
  history.add(kind, id, summary);
  return id;
}

export const pollTask = (kind, id, onUpdate) => poll(KINDS[kind].get, KINDS[kind].idField, id, onUpdate);
