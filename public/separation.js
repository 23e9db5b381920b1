import { createTask, pollTask } from './api.js';
import { clearErrors, field, h, options, progressBlock, showError } from './ui.js';

/** The spec's model types and the stems each gives. */
const MODELS = [
  [501, ['bass', 'drums', 'vocals', 'other'], 'All stems, standard'],
  [320, ['bass', 'drums', 'vocals', 'piano', 'guitar', 'other'], 'All stems, 6 stems'],
  [350, ['vocals'], 'Vocals'],
  [490, ['lead_vocals', 'backing_vocals', 'other'], 'Lead and backing vocals'],
  [340, ['drums'], 'Drums'],
  [360, ['bass'], 'Bass'],
  [380, ['piano'], 'Piano'],
  [390, ['guitar'], 'Guitar'],
  [491, ['strings'], 'Strings'],
  [492, ['wind'], 'Wind'],
  [493, ['synthesizer'], 'Synthesizer'],
];
const stemName = (s) => s.replace('_', ' ');

/** Separation: a file or URL, the model type with its stems, live progress, a player per stem with solo/mute, a mix, the zip. */
class SeparationPage extends HTMLElement {
  connectedCallback() {
    if (this.form) return;
    this.source = h('sd-source');
    this.model = h('select', { name: 'model_type' }, options(MODELS.map(([v, stems, what]) => [v, `${v}: ${what} (${stems.map(stemName).join(', ')})`]), 501));
    this.stemsLine = h('p', { class: 'hint', 'aria-live': 'polite' });
    this.format = h('select', { name: 'output_format' }, options([['mp3', 'MP3'], ['wav', 'WAV'], ['flac', 'FLAC']], 'mp3'));
    this.progress = progressBlock('Separation progress');
    this.result = h('section', { class: 'result', 'aria-label': 'Stems', hidden: true });
    this.form = h('form', { onsubmit: (e) => (e.preventDefault(), this.create()) },
      this.source,
      h('div', { class: 'row' }, field('Model type', this.model), field('Stem format', this.format)),
      this.stemsLine,
      h('button', { type: 'submit', text: 'Separate' }),
      h('p', { class: 'error', 'data-error-for': 'form', hidden: true, role: 'alert' }),
      this.progress.el);
    this.append(h('h2', { text: 'Stem separation' }), this.form, this.result);
    this.model.addEventListener('change', () => this.describe());
    this.describe();
  }

  describe() {
    const [, stems] = MODELS.find(([v]) => String(v) === this.model.value);
    this.stemsLine.textContent = `This model gives: ${stems.map(stemName).join(', ')}.`;
  }

  async create() {
    clearErrors(this.form);
    this.result.hidden = true;
    try {
      this.progress.say('Uploading...');
      const inputurl = await this.source.resolve();
      const body = { model_type: Number(this.model.value), inputurl, output_format: this.format.value };
      const id = await createTask('separation', body, `model ${body.model_type}`);
      const done = await pollTask('separation', id, (d) => this.progress.update(d));
      if (done.status === 'success') this.show(done);
    } catch (err) {
      this.progress.say('');
      showError(this.form, err);
    }
  }

  show(done) {
    const stems = Object.entries(done.output);
    const rows = stems.map(([stem, url]) => {
      const solo = h('input', { type: 'checkbox', id: `sep-solo-${stem}` });
      const mute = h('input', { type: 'checkbox', id: `sep-mute-${stem}` });
      const player = h('sd-player');
      // Why the built-in engine returned this stem quiet or turned down (stem_notes), beside its player.
      const note = done.stem_notes?.[stem];
      const row = h('div', { class: 'stem' }, player, h('div', { class: 'row' },
        h('span', {}, solo, h('label', { for: solo.id, text: ` Solo ${stemName(stem)}` })),
        h('span', {}, mute, h('label', { for: mute.id, text: ` Mute ${stemName(stem)}` }))),
        ...(note ? [h('p', { class: 'hint stem-note', text: `Note on ${stemName(stem)}: ${note}` })] : []));
      return { stem, url, solo, mute, player, row };
    });
    this.stems = rows;
    const playMix = h('button', { type: 'button', text: 'Play mix', onclick: () => this.playMix() });
    const pauseMix = h('button', { type: 'button', text: 'Pause mix', onclick: () => rows.forEach((r) => r.player.audio.pause()) });
    this.mixLine = h('p', { 'aria-live': 'polite' });
    this.result.replaceChildren(
      h('h3', { text: 'Stems' }),
      h('p', { text: `${done.duration?.toFixed?.(1) ?? '?'} s of ${done.file_type ?? 'audio'}, engine ${done.engine ?? ''}, ${done.credits ?? 0} credit(s).` }),
      // Why the built-in engine ran although a neural model was wanted (engine_note).
      ...(done.engine_note ? [h('p', { class: 'engine-note', role: 'note', text: `Built-in engine: ${done.engine_note}` })] : []),
      h('div', { class: 'row' }, playMix, pauseMix, h('a', { href: done.zip_url, download: '', text: 'Download all stems (zip)' })),
      this.mixLine,
      ...rows.map((r) => r.row),
    );
    this.result.hidden = false;
    for (const r of rows) {
      r.player.setup({ label: `Stem ${stemName(r.stem)}`, src: r.url });
      r.solo.addEventListener('change', () => this.applyMix());
      r.mute.addEventListener('change', () => this.applyMix());
    }
    this.applyMix();
    document.dispatchEvent(new CustomEvent('sd-balance'));
  }

  /** Solo wins over mute, as on a mixing desk: with any stem soloed, only soloed stems sound. */
  applyMix() {
    const soloed = this.stems.some((r) => r.solo.checked);
    const heard = [];
    for (const r of this.stems) {
      const audible = soloed ? r.solo.checked : !r.mute.checked;
      r.player.audio.muted = !audible;
      if (audible) heard.push(stemName(r.stem));
    }
    this.mixLine.textContent = heard.length ? `Mix: ${heard.join(', ')}` : 'Mix: every stem is muted';
  }

  /** Plays every stem from the same point, so the audible ones sound as one mix. */
  playMix() {
    const at = this.stems.find((r) => !r.player.audio.paused)?.player.audio.currentTime ?? this.stems[0]?.player.audio.currentTime ?? 0;
    for (const r of this.stems) {
      r.player.audio.currentTime = at;
      r.player.audio.play().catch(() => {});
    }
  }
}
customElements.define('sd-separation', SeparationPage);
