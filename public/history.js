import { call, history, KINDS } from './api.js';
import { h } from './ui.js';

/** The result links of a finished task, whatever its kind. */
function results(kind, d) {
  if (d.status === 'failed') return [h('span', { text: d.error ?? 'failed' })];
  if (d.status !== 'success') return [h('span', { text: typeof d.progress === 'number' ? `${Math.round(d.progress * 100)}%` : '' })];
  const url = d.file_url ?? d.output;
  if (kind === 'separation') return [h('a', { href: d.zip_url, text: 'stems (zip)' }), ...Object.entries(d.output ?? {}).map(([s, u]) => h('a', { href: u, text: ` ${s}` }))];
  if (kind === 'podcast_script') return [h('span', { text: `${d.podcast_script?.length ?? 0} lines: ${d.title ?? ''}` })];
  return [h('audio', { controls: true, preload: 'none', src: url, 'aria-label': `Result of ${KINDS[kind].label} task ${d.id}` }), h('a', { href: url, text: 'download' })];
}

/** The key's tasks created in this browser, asked again from the server: status and results as they are now. */
class HistoryPage extends HTMLElement {
  connectedCallback() {
    if (this.body) return;
    this.body = h('tbody');
    this.append(
      h('h2', { text: 'History' }),
      h('p', { class: 'hint', text: 'Tasks this key created from this browser. Soundry keeps tasks and results for a limited time; older ones show as expired.' }),
      h('button', { type: 'button', text: 'Refresh history', onclick: () => this.refresh() }),
      h('table', {}, h('caption', { text: 'Your tasks' }),
        h('thead', {}, h('tr', {}, ['Created', 'Kind', 'What', 'Status', 'Result'].map((t) => h('th', { scope: 'col', text: t })))), this.body),
    );
    document.addEventListener('sd-history', () => !this.hidden && this.refresh());
    document.addEventListener('sd-key', () => this.refresh());
    this.refresh();
  }

  async refresh() {
    const items = history.list();
    const cells = [];
    this.body.replaceChildren(...items.map((item) => {
      const status = h('td', { text: '...' });
      const result = h('td');
      cells.push([item, status, result]);
      return h('tr', { 'data-task': item.id }, h('td', { text: new Date(item.created).toLocaleString() }), h('td', { text: KINDS[item.kind]?.label ?? item.kind }), h('td', { text: item.summary ?? '' }), status, result);
    }));
    if (!items.length) this.body.append(h('tr', {}, h('td', { colspan: 5, text: 'No task yet.' })));
    // One query at a time, a little apart: a long history must not use up the key's rate limit (10/s by default).
    const round = (this.round = (this.round ?? 0) + 1);
    for (const [item, status, result] of cells) {
      if (round !== this.round) return;
      await this.fill(item, status, result);
      await new Promise((r) => setTimeout(r, 120));
    }
  }

  /** One query per task, not polled to the end: the page shows each task's state now. */
  async fill(item, status, result) {
    try {
      const d = await call('POST', KINDS[item.kind].get, { [KINDS[item.kind].idField]: item.id });
      status.textContent = d.status;
      result.replaceChildren(...results(item.kind, { ...d, id: item.id }));
    } catch (err) {
      status.textContent = err.code === 101008 ? 'expired' : 'unknown';
      result.textContent = err.plain ?? err.message;
    }
  }
}
customElements.define('sd-history', HistoryPage);
