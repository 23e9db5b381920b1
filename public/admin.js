import { ApiError } from './api.js';
import { clearErrors, field, h, showError } from './ui.js';

const TOKEN = 'soundry.adminToken';

/** The admin API, with the token in its own header; answers data or throws the envelope's error. */
async function admin(method, path, body) {
  const res = await fetch(`/admin/api${path}`, {
    method,
    headers: { 'x-admin-token': sessionStorage.getItem(TOKEN) ?? '', ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const env = await res.json().catch(() => ({ code: res.status, message: `The server answered ${res.status}.` }));
  if (env.code === 100401) {
    const err = new ApiError(env);
    err.field = 'admin-token';
    Object.defineProperty(err, 'plain', { value: 'This admin token was not accepted. Use the ADMIN_TOKEN the server was started with.' });
    throw err;
  }
  if (env.code !== 100000) throw new ApiError(env);
  return env.data;
}

const when = (ms) => new Date(ms).toLocaleString();

/** Accounts, their keys and usage; credits, new keys, enabling and disabling keys. Exists only with ADMIN_TOKEN. */
class AdminPage extends HTMLElement {
  connectedCallback() {
    if (this.form) return;
    // The token is kept for this tab only (sessionStorage): it opens every account, unlike an API key.
    this.token = h('input', { type: 'password', name: 'admin-token', autocomplete: 'off' });
    this.form = h('form', { onsubmit: (e) => (e.preventDefault(), sessionStorage.setItem(TOKEN, this.token.value.trim()), this.load()) },
      field('Admin token', this.token), h('button', { type: 'submit', text: 'Open admin' }),
      h('p', { class: 'error', 'data-error-for': 'form', hidden: true, role: 'alert' }));
    this.newCredits = h('input', { type: 'number', name: 'credits', min: 0, value: 0 });
    this.newAccount = h('input', { type: 'text', name: 'account_id', placeholder: 'empty: a new account' });
    this.issued = h('p', { 'aria-live': 'polite' });
    this.createForm = h('form', { hidden: true, onsubmit: (e) => (e.preventDefault(), this.createKey()) },
      h('h3', { text: 'New API key' }), h('div', { class: 'row' }, field('Credits for the new key', this.newCredits, { errorFor: 'credits' }), field('Account for the new key', this.newAccount, { errorFor: 'account_id' })),
      h('button', { type: 'submit', text: 'Create key' }), h('p', { class: 'error', 'data-error-for': 'form', hidden: true, role: 'alert' }), this.issued);
    this.table = h('div');
    this.append(h('h2', { text: 'Admin' }), this.form, this.createForm, this.table);
    if (sessionStorage.getItem(TOKEN)) this.load();
  }

  async load() {
    clearErrors(this.form);
    try {
      const { accounts } = await admin('GET', '/accounts');
      this.render(accounts);
      this.createForm.hidden = false;
    } catch (err) {
      this.table.replaceChildren();
      this.createForm.hidden = true;
      showError(this.form, err);
    }
  }

  render(accounts) {
    const rows = accounts.map((a) => {
      const amount = h('input', { type: 'number', min: 1, name: 'amount', id: `adm-credits-${a.id}` });
      const creditForm = h('form', { onsubmit: (e) => (e.preventDefault(), this.addCredits(a.id, amount, creditForm)) },
        h('label', { for: amount.id, text: `Credits to add to ${a.id}` }), amount, h('button', { type: 'submit', text: `Add credits to ${a.id}` }),
        h('p', { class: 'error', 'data-error-for': 'amount', hidden: true, role: 'alert' }), h('p', { class: 'error', 'data-error-for': 'form', hidden: true, role: 'alert' }));
      const keys = a.keys.map((k) => h('li', {}, `${k.prefix}... (${k.id}) ${k.enabled ? 'enabled' : 'disabled'}; `,
        `${k.usage.tasks} tasks, ${k.usage.succeeded} succeeded, ${k.usage.failed} failed, ${k.usage.credits} credits used `,
        h('button', { type: 'button', text: `${k.enabled ? 'Disable' : 'Enable'} key ${k.prefix}`, onclick: () => this.toggle(k) })));
      return h('tr', { 'data-account': a.id }, h('th', { scope: 'row', text: a.id }), h('td', { text: a.status }), h('td', { text: String(a.balance) }),
        h('td', {}, h('ul', { 'aria-label': `Keys of ${a.id}` }, keys)), h('td', {}, creditForm), h('td', { text: when(a.created_at) }));
    });
    this.table.replaceChildren(h('div', { class: 'table-wrap' }, h('table', {}, h('caption', { text: 'Accounts' }),
      h('thead', {}, h('tr', {}, ['Account', 'Status', 'Balance', 'Keys and usage', 'Credits', 'Created'].map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', {}, rows))));
  }

  async addCredits(accountId, input, form) {
    clearErrors(form);
    try {
      await admin('POST', '/credits', { account_id: accountId, amount: Number(input.value) });
      await this.load();
    } catch (err) {
      showError(form, err);
    }
  }

  async toggle(key) {
    try {
      await admin('POST', '/keys/enabled', { key_id: key.id, enabled: !key.enabled });
      await this.load();
    } catch (err) {
      showError(this.form, err);
    }
  }

  async createKey() {
    clearErrors(this.createForm);
    try {
      const body = { credits: Number(this.newCredits.value || 0), ...(this.newAccount.value.trim() ? { account_id: this.newAccount.value.trim() } : {}) };
      const made = await admin('POST', '/keys', body);
      this.issued.textContent = `New key (shown only now): ${made.api_key} for ${made.account_id}`;
      await this.load();
    } catch (err) {
      showError(this.createForm, err);
    }
  }
}
customElements.define('sd-admin', AdminPage);
