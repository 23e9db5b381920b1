import WaveSurfer from '/console/wavesurfer.esm.js';
import { ApiError, KEY_CODES, upload } from './api.js';

/** h('label', {for: 'x'}, 'Text', child...): DOM without innerHTML, so API text is never parsed as markup. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

/** Ids that tie labels and error lines to their controls; random, so no counter is kept between calls. */
export const uid = (prefix) => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;

/** A labelled control with its error line under it; the control is described by the error when there is one. */
export function field(label, control, { hint, errorFor } = {}) {
  control.id ||= uid('f');
  const error = h('p', { class: 'error', id: uid('err'), 'data-error-for': errorFor ?? control.name, hidden: true, role: 'alert' });
  const hintEl = hint ? h('p', { class: 'hint', id: uid('hint'), text: hint }) : null;
  control.setAttribute('aria-describedby', [hintEl?.id, error.id].filter(Boolean).join(' '));
  return h('div', { class: 'field' }, h('label', { for: control.id, text: label }), control, hintEl, error);
}

export function clearErrors(root) {
  for (const el of root.querySelectorAll('[data-error-for]')) {
    el.hidden = true;
    el.textContent = '';
  }
  for (const el of root.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}

/** Shows an API error in plain words next to the control it concerns, else at the form's own error line. */
export function showError(root, err) {
  const message = err instanceof ApiError ? err.plain : String(err?.message ?? err);
  if (err instanceof ApiError && KEY_CODES.has(err.code)) document.dispatchEvent(new CustomEvent('sd-key-error', { detail: message }));
  const slot = (err instanceof ApiError && err.field && root.querySelector(`[data-error-for="${err.field}"]`)) || root.querySelector('[data-error-for="form"]');
  slot.textContent = message;
  slot.hidden = false;
  const control = slot.parentElement?.querySelector('input, select, textarea');
  if (control && slot.dataset.errorFor !== 'form') control.setAttribute('aria-invalid', 'true');
}

/**
 * <sd-player>: an <audio> with native controls (the accessible player), its waveform drawn by
 * wavesurfer.js from the same element, and a download link.
 */
export class Player extends HTMLElement {
  setup({ label, src, download = true, downloadText = `Download ${label.toLowerCase()}`, plugins = [] }) {
    this.replaceChildren();
    this.audio = h('audio', { controls: true, preload: 'auto', 'aria-label': label, src });
    const wave = h('div', { class: 'wave', 'aria-hidden': 'true' });
    this.append(h('figure', {}, h('figcaption', { text: label }), wave, this.audio, download ? h('a', { href: src, download: '', text: downloadText }) : null));
    this.wave?.destroy();
    this.wave = WaveSurfer.create({ container: wave, media: this.audio, height: 64, waveColor: '#7a8ca3', progressColor: '#1f5fbf', plugins });
    return this;
  }

  disconnectedCallback() {
    this.wave?.destroy();
    this.wave = null;
  }
}
customElements.define('sd-player', Player);

/** <sd-source>: an audio file (drag and drop, or chosen) or a URL; resolve() uploads the file and answers the inputurl. */
export class Source extends HTMLElement {
  connectedCallback() {
    if (this.file) return;
    this.file = h('input', { type: 'file', name: 'file', accept: 'audio/*,video/*' });
    this.url = h('input', { type: 'url', name: 'inputurl', placeholder: 'https://example.com/song.mp3' });
    const zone = h('div', { class: 'drop' }, field('Audio file (drop it here or choose one)', this.file, { errorFor: 'file' }));
    zone.addEventListener('dragover', (e) => {
      e.preventDefault();
      zone.classList.add('over');
    });
    zone.addEventListener('dragleave', () => zone.classList.remove('over'));
    zone.addEventListener('drop', (e) => {
      e.preventDefault();
      zone.classList.remove('over');
      if (e.dataTransfer?.files.length) this.file.files = e.dataTransfer.files;
    });
    this.append(zone, field('Or audio URL', this.url, { errorFor: 'inputurl' }));
  }

  /** The chosen file's local URL (for a before/after player without downloading it again), else the URL given. */
  get localUrl() {
    const f = this.file.files?.[0];
    return f ? URL.createObjectURL(f) : this.url.value.trim();
  }

  async resolve() {
    const f = this.file.files?.[0];
    if (f) return upload(f);
    const url = this.url.value.trim();
    // Said where the API would say it: next to the URL field.
    if (!url) throw new ApiError({ code: 100002, message: 'Invalid parameters: inputurl: choose a file or enter its URL' });
    return url;
  }
}
customElements.define('sd-source', Source);

/** A progress bar with its label and a status line read out by screen readers. */
export function progressBlock(label) {
  const bar = h('progress', { max: 1, value: 0, id: uid('p') });
  const status = h('p', { class: 'status', 'aria-live': 'polite' });
  const wrap = h('div', { class: 'progress', hidden: true }, h('label', { for: bar.id, text: label }), bar, status);
  return {
    el: wrap,
    update(data) {
      wrap.hidden = false;
      if (typeof data.progress === 'number') bar.value = data.progress;
      const queue = typeof data.tasks_position === 'number' && data.tasks_position > 0 ? ` (number ${data.tasks_position} in the queue)` : '';
      status.textContent = data.status === 'waiting' ? `Working${queue}: ${Math.round((data.progress ?? 0) * 100)}%` : data.status === 'success' ? 'Done.' : `Failed: ${data.error ?? 'no reason given'}`;
      if (data.status === 'success') bar.value = 1;
    },
    say(text) {
      wrap.hidden = false;
      status.textContent = text;
    },
  };
}

export function options(pairs, selected) {
  return pairs.map(([value, label]) => h('option', { value, selected: String(value) === String(selected), text: label }));
}

export const LANGUAGES = [
  ['en', 'English'], ['zh', 'Chinese (Simplified)'], ['zh_yue', 'Cantonese'], ['ar', 'Arabic'], ['ru', 'Russian'], ['es', 'Spanish'],
  ['fr', 'French'], ['pt', 'Portuguese'], ['de', 'German'], ['ko', 'Korean'], ['ja', 'Japanese'],
];
