import { createTask, pollTask } from './api.js';
import { clearErrors, h, progressBlock, showError } from './ui.js';

/** The fourteen flags and what each does, in one line. */
const FLAGS = [
  ['autoid', 'Smart enhancement', 'Soundry listens first and picks the stages this recording needs.'],
  ['remove_noise', 'Remove noise', 'Takes out hiss, hum, fans and traffic under the voice.'],
  ['remove_background_audio', 'Remove background audio', 'Keeps only the voice; music and ambience go.'],
  ['keep_music', 'Keep background music', 'Cleans the voice alone and mixes the music back in.'],
  ['remove_echo', 'Remove echo', 'Reduces the echo of a room.'],
  ['remove_reverb', 'Remove reverb', 'Reduces the reverberation tail of a hall or bathroom.'],
  ['long_silences', 'Remove long silences', 'Shortens pauses over one second to about half a second.'],
  ['mouth_sounds', 'Remove mouth sounds', 'Repairs clicks and lip smacks.'],
  ['stutters', 'Reduce stutters', 'Removes repeated starts of a syllable.'],
  ['fillers', 'Remove filler words', 'Removes "uh" and "um".'],
  ['hesitations', 'Reduce hesitations', 'Shortens drawn-out syllables.'],
  ['autoeq', 'Auto EQ', 'Balances the tone toward clear speech.'],
  ['normalize', 'Auto normalization', 'Sets the loudness to -16 LUFS for podcasts and streaming.'],
  ['studio_sound', 'Studio-like sound', 'Clicks, noise, reverb, tone and loudness in one go.'],
];

/** Enhancement: flags with one-line explanations, an A/B player (before and after, with waveforms), the stages and reasons. */
class EnhancePage extends HTMLElement {
  connectedCallback() {
    if (this.form) return;
    this.source = h('sd-source');
    this.flags = FLAGS.map(([name, label, hint]) => {
      const box = h('input', { type: 'checkbox', name, id: `enh-${name}`, 'aria-describedby': `enh-${name}-hint`, checked: name === 'autoid' });
      return { name, box, el: h('div', { class: 'flag' }, box, h('label', { for: box.id, text: label }), h('p', { class: 'hint', id: `enh-${name}-hint`, text: hint })) };
    });
    this.progress = progressBlock('Enhancement progress');
    this.result = h('section', { class: 'result', 'aria-label': 'Before and after', hidden: true });
    this.form = h('form', { onsubmit: (e) => (e.preventDefault(), this.create()) },
      this.source,
      h('fieldset', {}, h('legend', { text: 'Enhancements' }), h('div', { class: 'flags' }, this.flags.map((f) => f.el)),
        h('p', { class: 'error', 'data-error-for': 'enhance_type', hidden: true, role: 'alert' })),
      h('button', { type: 'submit', text: 'Enhance' }),
      h('p', { class: 'error', 'data-error-for': 'form', hidden: true, role: 'alert' }),
      this.progress.el);
    this.append(h('h2', { text: 'Enhancement' }), this.form, this.result);
  }

  async create() {
    clearErrors(this.form);
    this.result.hidden = true;
    const enhance_type = Object.fromEntries(this.flags.map((f) => [f.name, f.box.checked]));
    try {
      this.progress.say('Uploading...');
      const before = this.source.localUrl;
      const inputurl = await this.source.resolve();
      const chosen = this.flags.filter((f) => f.box.checked).map((f) => f.name);
      const id = await createTask('enhance', { inputurl, enhance_type }, chosen.join(', ') || 'autoid');
      const done = await pollTask('enhance', id, (d) => this.progress.update(d));
      if (done.status === 'success') this.show(done, before || inputurl);
    } catch (err) {
      this.progress.say('');
      showError(this.form, err);
    }
  }

  show(done, beforeUrl) {
    const before = h('sd-player');
    const after = h('sd-player');
    const which = h('p', { 'aria-live': 'polite', text: 'Listening to: after' });
    let current = 'after';
    // A/B: the other version takes over at the same moment, so the difference is heard, not remembered.
    const toggle = h('button', { type: 'button', text: 'Switch between before and after', onclick: () => {
      const [from, to, name] = current === 'after' ? [after.audio, before.audio, 'before'] : [before.audio, after.audio, 'after'];
      current = name;
      to.currentTime = Math.min(from.currentTime, to.duration || from.currentTime);
      from.pause();
      to.play().catch(() => {});
      which.textContent = `Listening to: ${name}`;
    } });
    const stages = (done.stages ?? []).map((s) => h('li', {}, h('strong', { text: s }), h('span', { text: done.reasons?.[s] ? `: ${done.reasons[s]}` : '' })));
    const others = Object.entries(done.reasons ?? {}).filter(([s]) => !(done.stages ?? []).includes(s)).map(([s, why]) => h('li', {}, h('strong', { text: s }), h('span', { text: `: ${why}` })));
    this.result.replaceChildren(
      h('h3', { text: 'Before and after' }), toggle, which, before, after,
      h('h3', { text: 'What Soundry did' }),
      h('p', { text: `Engine ${done.engine ?? ''}, ${done.duration?.toFixed?.(1) ?? '?'} s, ${done.credits ?? 0} credit(s).` }),
      h('ol', { 'aria-label': 'Stages' }, stages.length ? stages : h('li', { text: 'No stage ran.' })),
      ...(others.length ? [h('ul', { 'aria-label': 'Notes' }, others)] : []),
    );
    this.result.hidden = false;
    before.setup({ label: 'Before', src: beforeUrl, download: false });
    after.setup({ label: 'After', src: done.output, downloadText: 'Download the enhanced audio' });
    document.dispatchEvent(new CustomEvent('sd-balance'));
  }
}
customElements.define('sd-enhance', EnhancePage);
