import RegionsPlugin from '/console/regions.esm.js';
import { apiKey, call, createTask, pollTask, upload } from './api.js';
import { clearErrors, field, h, LANGUAGES, options, progressBlock, showError } from './ui.js';

const SOURCES = [[4, 'Plain text'], [1, 'Website'], [2, 'Video-sharing link'], [3, 'Attachment (PDF, DOCX, EPUB, ...)']];
const STYLES = ['Educational', 'Interview', 'Deep Dive', 'Storytelling', 'News Report', 'Talk Show', 'Personal Growth', 'Funny', 'Roast'];
const DURATIONS = ['0-1 minutes', '1-3 minutes', '3-5 minutes', '5-7 minutes', '7-8 minutes', '8-10 minutes', '10-15 minutes'];
const clock = (s) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, '0')}`;

/** Podcast: step 1 (source, style, duration, language, speakers), a script editor, step 2, the episode with its chapters. */
class PodcastPage extends HTMLElement {
  connectedCallback() {
    if (this.form) return;
    this.sourceType = h('select', { name: 'source_type' }, options(SOURCES, 4));
    this.text = h('textarea', { name: 'text', rows: 6 });
    this.url = h('input', { type: 'url', name: 'url', placeholder: 'https://...' });
    this.file = h('input', { type: 'file', name: 'file' });
    this.styleSelect = h('select', { name: 'style' }, options(STYLES.map((s, i) => [i + 1, s]), 1));
    this.duration = h('select', { name: 'duration' }, options(DURATIONS.map((d, i) => [i + 1, d]), 1));
    this.language = h('select', { name: 'language' }, options(LANGUAGES, 'en'));
    this.speakers = h('div', { class: 'voices' });
    this.textField = field('Source text', this.text);
    this.urlField = field('Source URL', this.url);
    this.fileField = field('Attachment file', this.file, { hint: 'Or give its URL above.', errorFor: 'file' });
    this.progress = progressBlock('Script progress');
    this.form = h('form', { onsubmit: (e) => (e.preventDefault(), this.writeScript()) },
      field('Source type', this.sourceType), this.textField, this.urlField, this.fileField,
      h('div', { class: 'row' }, field('Style', this.styleSelect), field('Duration', this.duration), field('Podcast language', this.language)),
      h('fieldset', {}, h('legend', { text: 'Speakers (two or more; none: a female and a male voice)' }), this.speakers,
        h('p', { class: 'error', 'data-error-for': 'speakers', hidden: true, role: 'alert' })),
      h('button', { type: 'submit', text: 'Write script' }),
      h('p', { class: 'error', 'data-error-for': 'form', hidden: true, role: 'alert' }),
      this.progress.el);
    this.editor = h('section', { 'aria-label': 'Script editor', hidden: true });
    this.episode = h('section', { 'aria-label': 'Episode', hidden: true });
    this.append(h('h2', { text: 'Podcast' }), this.form, this.editor, this.episode);
    this.sourceType.addEventListener('change', () => this.syncSource());
    this.language.addEventListener('change', () => this.loadSpeakers());
    document.addEventListener('sd-key', () => this.loadSpeakers());
    this.syncSource();
    this.loadSpeakers();
  }

  syncSource() {
    const type = Number(this.sourceType.value);
    this.textField.hidden = type !== 4;
    this.urlField.hidden = type === 4;
    this.fileField.hidden = type !== 3;
  }

  async loadSpeakers() {
    if (!apiKey.get()) return;
    try {
      const { records } = await call('GET', `/podcast/voices?language=${this.language.value}&page_size=500`);
      this.speakers.replaceChildren(...records.map((v) => {
        const box = h('input', { type: 'checkbox', name: 'speakers', value: v.id, id: `pod-voice-${v.id}` });
        return h('div', { class: 'voice' }, box, h('label', { for: box.id, text: `${v.display_name} (${v.gender_text})` }));
      }));
    } catch (err) {
      showError(this.form, err);
    }
  }

  async writeScript() {
    clearErrors(this.form);
    this.editor.hidden = this.episode.hidden = true;
    const source_type = Number(this.sourceType.value);
    try {
      const body = {
        source_type,
        speakers: [...this.speakers.querySelectorAll('input:checked')].map((b) => Number(b.value)),
        style: Number(this.styleSelect.value),
        duration: Number(this.duration.value),
        language: this.language.value,
        use_mode: 'ai',
        commercial_use: 0,
      };
      if (source_type === 4) body.text = this.text.value;
      else body.url = source_type === 3 && this.file.files?.[0] ? await upload(this.file.files[0]) : this.url.value.trim();
      const id = await createTask('podcast_script', body, body.text?.slice(0, 60) ?? body.url);
      const done = await pollTask('podcast_script', id, (d) => this.progress.update(d));
      if (done.status === 'success') this.edit(done);
    } catch (err) {
      this.progress.say('');
      showError(this.form, err);
    }
  }

  /** The script as an editable form: title, introduction, every line (edit or remove), then step 2. */
  edit(script) {
    this.script = script;
    this.titleInput = h('input', { type: 'text', name: 'title', value: script.title ?? '' });
    this.intro = h('textarea', { name: 'processed_content', rows: 3 });
    this.intro.value = script.processed_content ?? '';
    this.lines = h('ol', { class: 'lines' });
    script.podcast_script.forEach((line, i) => {
      const text = h('textarea', { rows: 2, id: `pod-line-${i}` });
      text.value = line.text;
      const li = h('li', { class: 'line' }, h('div', { class: 'field' }, h('label', { for: text.id, text: `Line ${i + 1}, ${line.name}` }), text),
        h('button', { type: 'button', text: `Remove line ${i + 1}`, onclick: () => li.remove() }));
      Object.assign(li, { original: i, line, textArea: text });
      this.lines.append(li);
    });
    this.editForm = h('form', { onsubmit: (e) => (e.preventDefault(), this.makeEpisode()) },
      field('Title', this.titleInput), field('Introduction', this.intro), this.lines,
      h('p', { class: 'error', 'data-error-for': 'podcast_script', hidden: true, role: 'alert' }),
      h('button', { type: 'submit', text: 'Make episode' }),
      h('p', { class: 'error', 'data-error-for': 'form', hidden: true, role: 'alert' }));
    this.audioProgress = progressBlock('Episode progress');
    this.editor.replaceChildren(h('h3', { text: 'Script' }), h('p', { class: 'hint', text: `Written by ${script.engine ?? 'Soundry'}. Edit lines or remove them, then make the episode.` }), this.editForm, this.audioProgress.el);
    this.editor.hidden = false;
  }

  /** Highlights keep pointing at their lines after some are removed; one whose lines are all gone is dropped. */
  highlightsFor(kept) {
    return (this.script.hightlights ?? []).flatMap((hl) => {
      const inside = kept.map((orig, at) => [orig, at]).filter(([orig]) => orig >= hl.script_start_index && orig <= hl.script_end_index);
      if (!inside.length) return [];
      return [{ ...hl, script_start_index: inside[0][1], script_end_index: inside.at(-1)[1] }];
    });
  }

  async makeEpisode() {
    clearErrors(this.editForm);
    const items = [...this.lines.children];
    const podcast_script = items.map((li) => ({ ...li.line, text: li.textArea.value }));
    const body = {
      title: this.titleInput.value,
      processed_content: this.intro.value,
      podcast_script,
      hightlights: this.highlightsFor(items.map((li) => li.original)),
      global_id: this.script.global_id,
    };
    try {
      const id = await createTask('podcast_audio', body, body.title);
      const done = await pollTask('podcast_audio', id, (d) => this.audioProgress.update(d));
      if (done.status === 'success') this.play(done);
    } catch (err) {
      this.audioProgress.say('');
      showError(this.editForm, err);
    }
  }

  /** The episode, its highlights as chapters: marked on the waveform and listed as buttons that jump there. */
  play(done) {
    const regions = RegionsPlugin.create();
    const player = h('sd-player');
    const chapters = (done.hightlights ?? []).filter((c) => typeof c.start_time === 'number');
    const list = h('ol', { 'aria-label': 'Chapters' }, chapters.map((c) => h('li', {}, h('button', {
      type: 'button', text: `${clock(c.start_time)} ${c.highlight}`,
      onclick: () => {
        player.audio.currentTime = c.start_time;
        player.audio.play().catch(() => {});
      },
    }))));
    this.episode.replaceChildren(h('h3', { text: done.title ?? 'Episode' }), player,
      h('p', { text: `${clock(done.duration ?? 0)}, ${done.credits ?? 0} credit(s).` }),
      h('h4', { text: 'Chapters' }), chapters.length ? list : h('p', { text: 'No highlights in this episode.' }));
    this.episode.hidden = false;
    player.setup({ label: 'Episode', src: done.file_url, plugins: [regions] });
    player.wave.on('decode', () => {
      for (const c of chapters) regions.addRegion({ start: c.start_time, content: c.highlight.slice(0, 24), color: 'rgba(31, 95, 191, 0.5)', drag: false, resize: false });
    });
    document.dispatchEvent(new CustomEvent('sd-balance'));
  }
}
customElements.define('sd-podcast', PodcastPage);
