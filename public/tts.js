import { apiKey, call, createTask, pollTask } from './api.js';
import { clearErrors, field, h, LANGUAGES, options, progressBlock, showError } from './ui.js';

const EMOTIONS = ['auto', 'happy', 'angry', 'sad', 'afraid', 'disgusted', 'melancholic', 'surprised', 'calm'];
const GENDERS = { 1: 'male', 2: 'female' };

/** Text to speech: a voice browser (filters, previews), emotion, speed, text, then the result's player. */
class TtsPage extends HTMLElement {
  async connectedCallback() {
    if (this.form) return;
    this.language = h('select', { name: 'language' }, options([['all', 'All languages'], ...LANGUAGES], 'en'));
    this.gender = h('select', { name: 'gender' }, options([['', 'Any'], ['1', 'Male'], ['2', 'Female']], ''));
    this.search = h('input', { type: 'search', name: 'search', placeholder: 'name or accent' });
    this.voiceList = h('div', { class: 'voices', role: 'radiogroup', 'aria-label': 'Voices' });
    this.preview = h('audio', { controls: true, 'aria-label': 'Voice preview', hidden: true });
    this.emotion = h('select', { name: 'emotion' }, options(EMOTIONS.map((e, i) => [i, e]), 0));
    this.speed = h('select', { name: 'speed' }, options([['0.5', 'Slow (0.5x)'], ['1', 'Standard (1x)'], ['1.5', 'Brisk (1.5x)'], ['2', 'Fast (2x)']], '1'));
    this.text = h('textarea', { name: 'text', rows: 5 });
    this.progress = progressBlock('Speech progress');
    this.result = h('section', { class: 'result', 'aria-label': 'Speech result', hidden: true });
    this.form = h('form', { onsubmit: (e) => (e.preventDefault(), this.create()) },
      h('fieldset', {}, h('legend', { text: 'Voice' }),
        h('div', { class: 'row' }, field('Language', this.language), field('Gender', this.gender), field('Search voices', this.search)),
        this.voiceList, h('p', { class: 'error', 'data-error-for': 'voice_id', hidden: true, role: 'alert' }), this.preview),
      h('div', { class: 'row' }, field('Emotion', this.emotion), field('Speed', this.speed)),
      field('Text', this.text, { hint: 'Line breaks become pauses. 1 credit per 100 characters.' }),
      h('button', { type: 'submit', text: 'Create speech' }),
      h('p', { class: 'error', 'data-error-for': 'form', hidden: true, role: 'alert' }),
      this.progress.el);
    this.append(h('h2', { text: 'Text to speech' }), this.form, this.result);
    for (const el of [this.language, this.gender]) el.addEventListener('change', () => this.loadVoices());
    this.search.addEventListener('input', () => this.renderVoices());
    this.voiceList.addEventListener('change', () => this.syncEmotions());
    document.addEventListener('sd-key', () => this.loadVoices());
    await this.loadVoices();
  }

  async loadVoices() {
    clearErrors(this.form);
    if (!apiKey.get()) return;
    const q = new URLSearchParams({ page_size: '500' });
    if (this.language.value !== 'all') q.set('language', this.language.value);
    if (this.gender.value) q.set('gender', this.gender.value);
    // Filters changed quickly: only the latest answer is shown.
    const asked = (this.asked = (this.asked ?? 0) + 1);
    let voices = [];
    try {
      voices = (await call('GET', `/tts/voices?${q}`)).records;
    } catch (err) {
      showError(this.form, err);
    }
    if (asked !== this.asked) return;
    this.voices = voices;
    this.renderVoices();
  }

  renderVoices() {
    const needle = this.search.value.trim().toLowerCase();
    const shown = (this.voices ?? []).filter((v) => !needle || `${v.display_name} ${v.name}`.toLowerCase().includes(needle));
    const previous = this.voiceList.querySelector('input:checked')?.value;
    // Preselected: the voice chosen before, else an installed neural voice (the best this server has), else the first.
    const preferred = shown.find((v) => v.neural && v.downloaded !== false) ?? shown[0];
    const checked = shown.some((v) => String(v.id) === previous) ? previous : String(preferred?.id);
    this.voiceList.replaceChildren(
      ...shown.map((v) => {
        const radio = h('input', { type: 'radio', name: 'voice_id', value: v.id, id: `tts-voice-${v.id}`, checked: String(v.id) === checked });
        radio.voice = v;
        // Neural voices say so; one not downloaded yet warns that its first use downloads the model (docs/api.md).
        const kind = v.neural ? (v.downloaded === false ? ', neural, downloaded on first use' : ', neural') : '';
        const describe = `${v.display_name} (${v.language}, ${GENDERS[v.gender] ?? 'voice'}${kind})`;
        return h('div', { class: 'voice' }, radio, h('label', { for: radio.id, text: describe }),
          h('button', { type: 'button', 'aria-label': `Preview ${v.display_name}`, text: 'Preview', onclick: () => this.play(v) }));
      }),
    );
    if (!shown.length) this.voiceList.append(h('p', { text: 'No voice matches these filters.' }));
    this.syncEmotions();
  }

  play(voice) {
    this.preview.hidden = false;
    this.preview.src = `/assets/voices/${voice.id}.mp3`;
    this.preview.play().catch(() => {});
  }

  get voice() {
    return this.voiceList.querySelector('input:checked')?.voice;
  }

  /** Only the emotions the chosen voice lists can be asked for. */
  syncEmotions() {
    const supported = new Set(this.voice?.emotion ?? EMOTIONS);
    for (const opt of this.emotion.options) opt.disabled = !supported.has(opt.textContent);
  }

  async create() {
    clearErrors(this.form);
    this.result.hidden = true;
    const voice = this.voice;
    if (!voice) return showError(this.form, new Error('Choose a voice first.'));
    const body = { voice_id: voice.id, emotion: Number(this.emotion.value), speed: Number(this.speed.value), language: voice.language, text: this.text.value };
    try {
      this.progress.say('Sending...');
      const id = await createTask('tts', body, `${voice.display_name}: ${body.text.slice(0, 60)}`);
      const done = await pollTask('tts', id, (d) => this.progress.update(d));
      if (done.status === 'success') this.show(done);
    } catch (err) {
      this.progress.say('');
      showError(this.form, err);
    }
  }

  show(done) {
    const player = h('sd-player');
    const facts = `${done.duration?.toFixed?.(1) ?? '?'} s, voice ${done.voice ?? ''}, engine ${done.engine ?? ''}, emotion ${done.emotion ?? ''}, ${done.credits ?? 0} credit(s)`;
    // The neural voice asked for did not speak (its model could not be downloaded): why, and who spoke instead.
    const note = done.engine_note ? [h('p', { class: 'engine-note', role: 'note', text: `Built-in voice used: ${done.engine_note}` })] : [];
    this.result.replaceChildren(h('h3', { text: 'Result' }), player, h('p', { text: facts }), ...note);
    this.result.hidden = false;
    player.setup({ label: 'Speech', src: done.output });
    document.dispatchEvent(new CustomEvent('sd-balance'));
  }
}
customElements.define('sd-tts', TtsPage);
