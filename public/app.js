import { apiKey, call } from './api.js';

/** Pages are loaded on first visit and kept (hidden) afterwards, so a running task keeps its state. */
const PAGES = {
  tts: ['sd-tts', './tts.js'],
  separation: ['sd-separation', './separation.js'],
  enhance: ['sd-enhance', './enhance.js'],
  podcast: ['sd-podcast', './podcast.js'],
  history: ['sd-history', './history.js'],
  admin: ['sd-admin', './admin.js'],
};
const main = document.getElementById('main');
const keyInput = document.getElementById('api-key');
const keyError = document.getElementById('api-key-error');
const balance = document.getElementById('balance');

const pageName = () => {
  const name = location.hash.replace(/^#\/?/, '');
  return PAGES[name] ? name : 'tts';
};

// The admin page exists only when the server has an ADMIN_TOKEN.
const adminEnabled = fetch('/admin/api/enabled')
  .then((r) => (r.ok ? r.json() : null))
  .then((d) => Boolean(d?.data?.enabled))
  .catch(() => false);
const resolvePage = async () => {
  const name = pageName();
  return name === 'admin' && !(await adminEnabled) ? 'tts' : name;
};

async function show() {
  const name = await resolvePage();
  const [tag, module] = PAGES[name];
  await import(module);
  // Another navigation happened while this page's module loaded: that one shows its page, not this one.
  if ((await resolvePage()) !== name) return;
  for (const page of main.children) page.hidden = page.localName !== tag;
  if (!main.querySelector(tag)) main.append(document.createElement(tag));
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === `#/${name}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

async function refreshBalance() {
  if (!apiKey.get()) {
    balance.textContent = 'Enter your API key to start.';
    return;
  }
  try {
    const data = await call('GET', '/account/balance');
    keyError.hidden = true;
    keyError.textContent = '';
    keyInput.removeAttribute('aria-invalid');
    // Held: promised to tasks still running; a new task can use only the rest (docs/api.md "Billing").
    const held = data.held > 0 ? ` (${data.held} held by unfinished tasks)` : '';
    balance.textContent = `Balance: ${data.balance} credits${held}${data.key_enabled ? '' : ' (this key is disabled)'}${data.status === 'active' ? '' : ' (account suspended)'}`;
  } catch (err) {
    balance.textContent = '';
    keyProblem(err.plain ?? err.message);
  }
}

function keyProblem(message) {
  keyError.textContent = message;
  keyError.hidden = false;
  keyInput.setAttribute('aria-invalid', 'true');
}

document.getElementById('key-form').addEventListener('submit', (e) => {
  e.preventDefault();
  apiKey.set(keyInput.value.trim());
  document.dispatchEvent(new CustomEvent('sd-key'));
  refreshBalance();
});
document.addEventListener('sd-key-error', (e) => keyProblem(e.detail));
document.addEventListener('sd-balance', refreshBalance);
keyInput.value = apiKey.get();
adminEnabled.then((on) => {
  document.getElementById('admin-link').hidden = !on;
});
addEventListener('hashchange', show);
refreshBalance();
show();
