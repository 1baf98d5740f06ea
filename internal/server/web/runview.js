// runview.js — the view of one run: question, activity timeline, streamed
// then rendered answer, sources, summary, status and its buttons.
//
// The newest run of the open thread is the "primary" view: it carries the
// stable ids the browser tests use (#timeline, #answer, #sources,
// #run-status, …). Earlier runs of the thread get the same structure
// without ids; their timeline loads when their "Activity" is opened.

import { el, clear, show } from './dom.js';
import { parse, renderMarkdown, safeHref, hostOf, withoutSourcesList } from './markdown.js';
import { activityEntry } from './timeline.js';
import { compact, thousands, seconds, plural, usd } from './format.js';
import { reportMarkdown, reportJSON, fileName, copyText, download } from './report.js';

const ACTIVE = new Set(['queued', 'running', 'needs-input']);
const str = (v) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));

/** isActive says whether a run status can still change by itself or by an answer. */
export function isActive(status) {
  return ACTIVE.has(status);
}

// Which element gets which id on the primary view.
const PRIMARY_IDS = {
  statusEl: 'run-status',
  cancelBtn: 'run-cancel',
  resumeBtn: 'run-resume',
  timeline: 'timeline',
  answerStatus: 'answer-status',
  answer: 'answer',
  sources: 'sources',
  summary: 'run-summary',
  actionsEl: 'report-actions',
  copyBtn: 'report-copy',
  mdBtn: 'report-download-md',
  jsonBtn: 'report-download-json',
  actionStatus: 'report-action-status',
  interruptSlot: 'interrupt-slot',
  root: 'current-run',
};

export class RunView {
  /**
   * run: the Run object from the API.
   * actions: {cancel(view), resume(view), loadActivity(view), onChange(view)}
   * historic: true for an earlier run of the thread (its status and answer
   *           come from the API, its stream only fills the timeline).
   */
  constructor(run, actions, { historic = false } = {}) {
    this.run = { ...run };
    this.actions = actions;
    this.historic = historic;
    this.status = '';
    this.lastEventId = 0;
    this.primary = false;
    this.phase = ''; // 'writing' once the answer is being written
    this.answerFinal = false; // a report has been rendered
    this.streamNode = null; // text node the tokens are appended to
    this.interrupt = null;
    this.errors = new Set();
    this.activityLoaded = !historic;
    this.live = false; // followed while it runs (its errors also raise the alert)
    this.following = false; // a stream is being read for this view
    this.reopen = false; // read the stream again after its end (resumed)
    this.#build();
    this.applyRun(run, { report: historic });
  }

  get id() {
    return this.run.run_id;
  }

  get kind() {
    return this.run.kind === 'agent' ? 'agent' : 'research';
  }

  #build() {
    const run = this.run;
    this.statusEl = el('span', { class: 'badge run-status' });
    this.progressEl = el('span', { class: 'run-progress' });
    this.metaEl = el('span', { class: 'run-meta-text' });
    this.cancelBtn = el('button', { type: 'button', class: 'button small secondary', hidden: true }, 'Cancel');
    this.resumeBtn = el('button', { type: 'button', class: 'button small primary', hidden: true }, 'Resume');
    this.cancelBtn.addEventListener('click', () => this.actions.cancel(this));
    this.resumeBtn.addEventListener('click', () => this.actions.resume(this));

    this.timeline = el('ol', { class: 'timeline', 'aria-live': 'polite', 'aria-relevant': 'additions', 'aria-label': 'Activity' });
    this.activityCount = el('span', { class: 'count' });
    this.connection = el('p', { class: 'connection', role: 'status', hidden: true });
    this.activity = el('details', { class: 'activity' }, el('summary', {}, 'Activity', this.activityCount), this.timeline, this.connection);
    this.activity.open = !this.historic;
    this.activity.addEventListener('toggle', () => {
      if (this.activity.open && !this.activityLoaded) {
        this.activityLoaded = true;
        this.actions.loadActivity(this);
      }
    });

    this.answerStatus = el('p', { class: 'answer-status', 'aria-live': 'polite' });
    this.errorEl = el('div', { class: 'run-error', hidden: true });
    this.noticeEl = el('p', { class: 'notice', hidden: true });
    this.answer = el('div', { class: 'answer' });
    this.sources = el('ol', { class: 'sources' });
    this.sourcesSection = el('section', { class: 'sources-section', hidden: true }, el('h4', {}, 'Sources'), this.sources);
    this.summary = el('p', { class: 'run-summary', hidden: true });
    // Where the review or the agent's question shows, right under the
    // run's status: in view, not below the whole run.
    this.interruptSlot = el('div', { class: 'interrupt-slot' });

    // The report, to take away: copied as Markdown, downloaded as
    // Markdown or JSON.
    this.copyBtn = el('button', { type: 'button', class: 'button small secondary' }, 'Copy as Markdown');
    this.mdBtn = el('button', { type: 'button', class: 'button small secondary' }, 'Download .md');
    this.jsonBtn = el('button', { type: 'button', class: 'button small secondary' }, 'Download .json');
    this.actionStatus = el('span', { class: 'action-status', role: 'status' });
    this.actionsEl = el('div', { class: 'report-actions', hidden: true }, this.copyBtn, this.mdBtn, this.jsonBtn, this.actionStatus);
    this.copyBtn.addEventListener('click', () => this.#copy());
    this.mdBtn.addEventListener('click', () => this.#download('md'));
    this.jsonBtn.addEventListener('click', () => this.#download('json'));

    this.root = el(
      'article',
      { class: 'run', dataset: { runId: str(run.run_id) } },
      el(
        'header',
        { class: 'run-head' },
        el('p', { class: 'run-label' }, this.kind === 'agent' ? 'Task' : 'Question'),
        el('h3', { class: 'run-question' }, str(run.input)),
        el('div', { class: 'run-meta' }, this.statusEl, this.metaEl, this.progressEl, el('span', { class: 'run-buttons' }, this.cancelBtn, this.resumeBtn)),
      ),
      this.activity,
      this.answerStatus,
      this.interruptSlot,
      this.errorEl,
      this.noticeEl,
      this.answer,
      this.sourcesSection,
      this.summary,
      this.actionsEl,
    );
  }

  /** setPrimary gives (or takes away) the stable ids and the buttons. */
  setPrimary(on) {
    this.primary = on;
    for (const [field, id] of Object.entries(PRIMARY_IDS)) {
      if (on) this[field].id = id;
      else this[field].removeAttribute('id');
    }
    if (this.answer.dataset.streaming === 'true' && !on) this.answer.removeAttribute('data-streaming');
    if (on && this.streamNode && !this.answerFinal) this.answer.dataset.streaming = 'true';
    if (!on) this.activity.open = false;
    this.#syncButtons();
  }

  /**
   * applyRun takes what the API says about the run. opts.report: render the
   * run's report when it has one and none is shown yet.
   */
  applyRun(run, { report = true } = {}) {
    if (!run || typeof run !== 'object') return;
    this.run = { ...this.run, ...run };
    const s = this.run.settings && typeof this.run.settings === 'object' ? this.run.settings : {};
    const meta = [this.kind];
    if (this.kind === 'research' && s.effort) meta.push(`${str(s.effort)} effort`);
    if (s.backend) meta.push(str(s.backend));
    if (s.review) meta.push('review');
    this.metaEl.textContent = meta.join(' · ');
    if (run.status === 'needs-input' && run.interrupt && typeof run.interrupt === 'object') this.interrupt = run.interrupt;
    this.setStatus(run.status);
    if (run.status === 'failed' && run.error) this.showError(run.error);
    if (report && run.report && typeof run.report === 'object' && !this.answerFinal) this.renderReport(run.report);
    this.#updateSummary();
  }

  /** handle applies one stream event. */
  handle(type, data) {
    data = data && typeof data === 'object' ? data : {};
    if (type === 'activity') {
      this.#addActivity(data);
      return;
    }
    if (this.historic) return; // earlier runs: the timeline only
    switch (type) {
      case 'status':
        this.setStatus(data.status);
        // Only a failure is an error: a pause for an answer or a
        // cancellation carries its reason too, and is no error.
        if (data.status === 'failed' && data.error) this.showError(data.error);
        break;
      case 'token':
        if (data.restart) this.#restartStream(); // the stream broke off and is written again
        this.#appendToken(str(data.text));
        break;
      case 'state':
        this.#progress(data);
        break;
      case 'interrupt':
        this.interrupt = data;
        this.setStatus('needs-input');
        break;
      case 'report':
        this.renderReport(data);
        break;
      case 'error':
        this.showError(data.message || data.code || 'The run reported an error.');
        break;
      case 'end':
        this.setStatus(data.status);
        break;
      default:
      // Unknown event types are ignored: the contract may grow.
    }
  }

  setStatus(status) {
    if (typeof status !== 'string' || !status) return;
    this.status = status;
    this.statusEl.textContent = status;
    this.statusEl.className = `badge run-status status-${status.replace(/[^a-z-]/g, '')}`;
    if (status !== 'needs-input') this.interrupt = null;
    if (!isActive(status)) this.progressEl.textContent = '';
    this.#syncButtons();
    this.#updateAnswerStatus();
    this.actions.onChange?.(this);
  }

  /** setConnection shows a line under the timeline ("" hides it). */
  setConnection(text) {
    this.connection.textContent = text;
    show(this.connection, !!text);
  }

  /** clearTimeline empties the timeline (before a full replay). */
  clearTimeline() {
    clear(this.timeline);
    this.activityCount.textContent = '';
    this.lastEventId = 0;
  }

  showError(message) {
    const msg = str(message).trim();
    if (!msg || this.errors.has(msg)) return;
    this.errors.add(msg);
    this.errorEl.append(el('p', {}, msg));
    show(this.errorEl);
  }

  #syncButtons() {
    show(this.cancelBtn, this.primary && !this.historic && ['queued', 'running', 'needs-input'].includes(this.status));
    show(this.resumeBtn, this.primary && !this.historic && this.status === 'interrupted');
  }

  #addActivity(a) {
    const li = activityEntry(a);
    if (a.kind === 'searching' && typeof a.query === 'string') li.dataset.query = a.query;
    if (a.kind === 'searched') {
      // The search is over: its "searching" entry stops looking busy.
      for (const prev of this.timeline.querySelectorAll('li[data-kind="searching"]:not(.done)')) {
        if (prev.dataset.query === a.query) {
          prev.classList.add('done');
          break;
        }
      }
    }
    if (a.kind === 'finalizing' || a.kind === 'agent_done') this.phase = 'writing';
    this.timeline.append(li);
    this.activityCount.textContent = ` (${this.timeline.children.length})`;
    this.#updateAnswerStatus();
  }

  /** #restartStream drops the streamed text: the model is writing it again. */
  #restartStream() {
    if (this.streamNode) this.streamNode.data = '';
  }

  #appendToken(text) {
    if (!text) return;
    if (this.answerFinal) this.#resetAnswer(); // a resumed run writes a new answer
    if (!this.streamNode) {
      clear(this.answer);
      this.streamNode = document.createTextNode('');
      this.answer.append(el('div', { class: 'answer-stream' }, this.streamNode));
    }
    this.streamNode.appendData(text);
    this.answer.dataset.streaming = 'true';
    if (this.phase !== 'writing') {
      this.phase = 'writing';
      this.#updateAnswerStatus();
    }
  }

  #resetAnswer() {
    clear(this.answer);
    clear(this.sources);
    show(this.sourcesSection, false);
    show(this.noticeEl, false);
    show(this.summary, false);
    show(this.actionsEl, false);
    this.actionStatus.textContent = '';
    this.streamNode = null;
    this.answerFinal = false;
    this.report = null;
  }

  #progress(state) {
    const v = state.values && typeof state.values === 'object' ? state.values : {};
    const parts = [];
    if (Number(state.step)) parts.push(`step ${Number(state.step)}`);
    if (Number(v.sources)) parts.push(plural(v.sources, 'source', 'sources'));
    this.progressEl.textContent = parts.join(' · ');
  }

  /** renderReport replaces the streamed text by the rendered answer. */
  renderReport(report) {
    if (!report || typeof report !== 'object') return;
    this.#resetAnswer();
    this.report = report;
    this.answerFinal = true;
    this.answer.removeAttribute('data-streaming');

    const isAgent = typeof report.schema === 'string' ? report.schema.startsWith('deepgraph.agent') : 'task' in report;
    const sources = Array.isArray(report.sources) ? report.sources.filter((s) => s && typeof s === 'object') : [];
    // The sources have a section of their own below: an answer's own list
    // of them (an agent's answer carries one) is not shown twice.
    const markdown = sources.length ? withoutSourcesList(str(report.answer)) : str(report.answer);
    if (markdown.trim()) this.answer.append(renderMarkdown(parse(markdown), document, { headingOffset: 3, sources }));
    else this.answer.append(el('p', { class: 'muted' }, 'No answer was written.'));

    // Sources: numbered as the citations [n](url) number them.
    for (const s of sources) this.sources.append(sourceItem(s));
    show(this.sourcesSection, sources.length > 0);

    // What kept the answer from being complete.
    const notes = [];
    if (report.incomplete) notes.push('This answer is incomplete: the run stopped before it finished, so it holds only what was gathered.');
    if (!isAgent && !report.incomplete && sources.length === 0) {
      notes.push('This answer cites no source: nothing the research gathered supports it, so do not rely on it.');
    }
    if (isAgent) {
      const st = str(report.status);
      if (st && st !== 'success' && st !== 'answered') notes.push(`The agent stopped with status “${st}”.`);
      if (report.best_effort) notes.push('This is a best-effort answer.');
      if (report.waiting_for_answer) notes.push(`The agent is waiting for an answer to: ${str(report.waiting_for_answer)}`);
    }
    if (notes.length) {
      this.noticeEl.textContent = notes.join(' ');
      show(this.noticeEl);
    }
    if (report.error) this.showError(report.error);
    show(this.actionsEl, !this.historic || markdown.trim() !== '');
    this.#updateSummary();
    this.#updateAnswerStatus();
  }

  /** #copy copies the report as Markdown and says whether it worked. */
  async #copy() {
    const md = reportMarkdown(this.report);
    if (!md) return;
    const ok = await copyText(md);
    this.actionStatus.textContent = ok ? 'Copied.' : 'Could not copy: select the answer and copy it by hand.';
  }

  /** #download saves the report as Markdown (ext "md") or JSON. */
  #download(ext) {
    if (!this.report) return;
    const text = ext === 'md' ? reportMarkdown(this.report) : reportJSON(this.report);
    download(fileName(this.kind, this.id, ext), ext === 'md' ? 'text/markdown;charset=utf-8' : 'application/json', text);
    this.actionStatus.textContent = `Saved ${fileName(this.kind, this.id, ext)}.`;
  }

  #updateSummary() {
    const rep = this.report;
    if (!rep) return;
    const u = rep.usage_total && typeof rep.usage_total === 'object' ? rep.usage_total : {};
    const parts = [];
    const isAgent = 'task' in rep || str(rep.schema).startsWith('deepgraph.agent');
    if (isAgent) {
      if (rep.status) parts.push(str(rep.status));
      if (rep.steps !== undefined) parts.push(plural(rep.steps, 'step', 'steps'));
    }
    const tokens = u.total_tokens ?? this.run.tokens;
    if (tokens !== undefined) parts.push(`${thousands(tokens)} tokens`);
    const calls = u.calls ?? this.run.llm_calls;
    if (calls !== undefined) parts.push(plural(calls, 'LLM call', 'LLM calls'));
    // The run's own duration, start to end (waits for a review included);
    // the report's timings measure its last stretch only.
    const ms = this.run.duration_ms ?? rep.timings?.total_ms;
    if (Number(ms) > 0) parts.push(seconds(ms));
    const cost = costText(rep.cost, this.run.cost_usd, calls);
    if (cost) parts.push(cost);
    if (!isAgent) {
      const n = Array.isArray(rep.sources) ? rep.sources.length : 0;
      parts.push(n ? `${plural(n, 'source', 'sources')} cited` : 'no source cited');
      // dropped_citations; citations_dropped in reports stored before v2.
      const dropped = rep.dropped_citations ?? rep.citations_dropped;
      if (Number(dropped)) parts.push(`${plural(dropped, 'citation', 'citations')} dropped`);
      if (Number(rep.loops)) parts.push(plural(rep.loops, 'loop', 'loops'));
    }
    this.summary.textContent = parts.join(' · ');
    this.summary.title = tokens !== undefined ? `${compact(tokens)} tokens` : '';
    show(this.summary, parts.length > 0);
  }

  #updateAnswerStatus() {
    let text = '';
    switch (this.status) {
      case 'queued':
        text = 'Waiting in the queue…';
        break;
      case 'running':
        text = this.phase === 'writing' ? 'Writing the answer…' : this.kind === 'agent' ? 'The agent is working…' : 'Researching…';
        break;
      case 'needs-input':
        text = this.interrupt?.kind === 'question' ? 'The agent asks you a question (below).' : 'Waiting for your review of the search queries (below).';
        break;
      case 'done':
        text = this.answerFinal ? 'Answer ready.' : 'Done.';
        break;
      case 'failed':
        text = 'The run failed.';
        break;
      case 'interrupted':
        text = 'The run was interrupted. Resume it to go on.';
        break;
      default:
        text = '';
    }
    if (this.historic && this.status === 'done') text = '';
    if (this.answerStatus.textContent !== text) this.answerStatus.textContent = text;
    show(this.answerStatus, !!text);
  }
}

/**
 * costText is what a run's model calls cost: "$0.0123" (the report's cost,
 * else the run's cost_usd), "$0.0100 + unknown" when some model's price is
 * unknown, "cost unknown" when none is known; "" when nothing was called.
 */
export function costText(cost, runCost, calls) {
  const c = cost && typeof cost === 'object' ? cost : null;
  if (c && typeof c.total_usd === 'number') return usd(c.total_usd);
  if (!c && typeof runCost === 'number') return usd(runCost);
  if (!Number(calls)) return '';
  if (c && Number(c.known_usd) > 0) return `${usd(c.known_usd)} + unknown`;
  return 'cost unknown';
}

/** sourceItem builds one <li> of the Sources list. */
function sourceItem(s) {
  const number = Number(s.number) || undefined;
  const href = safeHref(str(s.url));
  const host = href ? hostOf(href) : '';
  const title = str(s.title).trim() || str(s.label).trim() || host || str(s.url) || 'Untitled source';
  const titleNode = href
    ? el('a', { class: 'source-link', href, target: '_blank', rel: 'noopener noreferrer nofollow' }, title)
    : el('span', { class: 'source-title' }, title);
  const where = [str(s.label).trim(), host].filter((x, i, a) => x && a.indexOf(x) === i).join(' · ');
  return el('li', { class: 'source-item', value: number }, titleNode, where ? el('span', { class: 'source-host' }, where) : null);
}
