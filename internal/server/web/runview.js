// runview.js — the view of one turn of a thread: its question, activity
// timeline, streamed then rendered answer, sources, summary, status and
// buttons. A turn is the run that asked the question and the runs that
// went on with it after: answers to its interrupts (command.resume) and
// runs that continued it (input null) after a cancel, a stop or a failure.
//
// What it shows comes from the Agent Server API: the answer streams as
// messages-tuple chunks and is the last ai message of the state's values
// at the end, with the values' sources; the timeline and the costs are
// custom events ({type: "activity"}, {type: "cost"}); a pause is an
// interrupt of the thread.
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

/** isActive says whether a status can still change by itself or by an answer. */
export function isActive(status) {
  return ACTIVE.has(status);
}

// The page's statuses of the API's run statuses; a run "interrupted" with
// an interrupt pending waits for its reader ("needs-input"), one without
// was cancelled ("interrupted").
const RUN_STATUS = { pending: 'queued', running: 'running', success: 'done', error: 'failed', interrupted: 'interrupted' };

/** pageStatus is the page's status of a run's, given whether its thread waits on an interrupt. */
export function pageStatus(runStatus, waiting) {
  const s = RUN_STATUS[runStatus] || '';
  return s === 'interrupted' && waiting ? 'needs-input' : s;
}

/** questionOf is the last human message of a run's input (its kwargs). */
export function questionOf(run) {
  const msgs = run?.kwargs?.input?.messages;
  if (!Array.isArray(msgs)) return '';
  let q = '';
  for (const m of msgs) if (m && (m.type === 'human' || m.role === 'user')) q = str(m.content);
  return q;
}

/** answerOf is the turn's answer: the last ai message after the last human one. */
export function answerOf(values) {
  const msgs = Array.isArray(values?.messages) ? values.messages : [];
  for (let i = msgs.length - 1; i >= 0; i--) {
    const m = msgs[i];
    if (!m || typeof m !== 'object') continue;
    if (m.type === 'human') break;
    if (m.type === 'ai' && str(m.content).trim() && !(Array.isArray(m.tool_calls) && m.tool_calls.length)) return str(m.content);
  }
  return str(values?.answer);
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
   * turn: {thread_id, kind ("research" | "agent"), question, runs: the
   *       API's runs of the turn, oldest first (may be empty until the
   *       first stream opens)}.
   * actions: {cancel(view), resume(view), loadActivity(view), onChange(view)}
   * historic: true for an earlier turn of the thread (its status and answer
   *           come from the API, its streams only fill the timeline).
   */
  constructor(turn, actions, { historic = false } = {}) {
    this.run = { thread_id: str(turn.thread_id), input: str(turn.question), kind: turn.kind === 'agent' ? 'agent' : 'research' };
    this.runs = Array.isArray(turn.runs) ? turn.runs.filter((r) => r && typeof r === 'object') : [];
    this.actions = actions;
    this.historic = historic;
    this.status = '';
    this.lastEventId = 0; // of the stream being read (the newest run's)
    this.primary = false;
    this.phase = ''; // 'writing' once the answer is being written
    this.answerFinal = false; // an answer has been rendered
    this.streamNode = null; // text node the tokens are appended to
    this.streamID = ''; // the id of the message being streamed
    this.interrupt = null;
    this.pending = false; // the thread has tasks left to run (Resume continues them)
    this.values = null; // the newest state values seen
    this.costs = new Map(); // run id → its last custom cost event
    this.errors = new Set();
    this.activityLoaded = !historic;
    this.live = false; // followed while it runs (its errors also raise the alert)
    this.following = false; // a stream is being read for this view
    this.#build();
    this.#syncMeta();
  }

  /** id is the turn's first run's id (the run that asked). */
  get id() {
    return this.runs.length ? str(this.runs[0].run_id) : '';
  }

  /** last is the turn's newest run, or null. */
  get last() {
    return this.runs.length ? this.runs[this.runs.length - 1] : null;
  }

  get kind() {
    return this.run.kind;
  }

  /** addRun adds (or updates) a run of the turn: the API's run object. */
  addRun(run) {
    if (!run || typeof run !== 'object' || !run.run_id) return;
    const i = this.runs.findIndex((r) => r.run_id === run.run_id);
    if (i >= 0) this.runs[i] = { ...this.runs[i], ...run };
    else this.runs.push({ ...run });
    if (this.runs.length === 1) this.root.dataset.runId = str(run.run_id);
    this.#syncMeta();
    this.#updateSummary();
  }

  #build() {
    this.statusEl = el('span', { class: 'badge run-status' });
    this.progressEl = el('span', { class: 'run-progress' });
    this.metaEl = el('span', { class: 'run-meta-text' });
    this.cancelBtn = el('button', { type: 'button', class: 'button small secondary', hidden: true }, 'Cancel');
    this.cancelBtn.addEventListener('click', () => this.actions.cancel(this));
    this.resumeBtn = el('button', { type: 'button', class: 'button small primary', hidden: true }, 'Resume');
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
      { class: 'run', dataset: { runId: this.id } },
      el(
        'header',
        { class: 'run-head' },
        el('p', { class: 'run-label' }, this.kind === 'agent' ? 'Task' : 'Question'),
        el('h3', { class: 'run-question' }, str(this.run.input)),
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

  /** #syncMeta shows the turn's kind and settings (the first run's configurable). */
  #syncMeta() {
    const first = this.runs[0];
    const c = first?.kwargs?.config?.configurable;
    const s = c && typeof c === 'object' ? c : {};
    const meta = [this.kind];
    if (this.kind === 'research' && s.effort) meta.push(`${str(s.effort)} effort`);
    if (s.backend) meta.push(str(s.backend));
    if (s.review === true) meta.push('review');
    this.metaEl.textContent = meta.join(' · ');
  }

  /**
   * applyEnd takes how the turn's newest run ended: its status, the
   * interrupt the thread waits on (or null), the state's values, whose
   * answer and sources it renders, and whether the thread has tasks left
   * to run (a run cancelled, stopped or failed midway: Resume goes on).
   */
  applyEnd(status, interrupt, values, pending = false) {
    this.pending = !!pending;
    if (values && typeof values === 'object') this.values = values;
    this.interrupt = status === 'needs-input' && interrupt && typeof interrupt === 'object' ? interrupt : null;
    if (status === 'done' || status === 'failed' || (status === 'interrupted' && this.values)) this.renderValues(this.values);
    this.setStatus(status);
    this.#updateSummary();
  }

  /** handle applies one stream event (mode, data) of the run with id runId. */
  handle(event, data, runId = '') {
    const mode = str(event).split('|')[0];
    if (mode === 'custom') {
      if (!data || typeof data !== 'object') return;
      if (data.type === 'activity' && data.activity && typeof data.activity === 'object') this.#addActivity(data.activity);
      else if (data.type === 'cost' && runId) {
        this.costs.set(runId, data);
        this.#updateSummary();
      }
      return;
    }
    if (this.historic) return; // earlier turns: the timeline only
    switch (mode) {
      case 'messages': {
        // messages-tuple: [chunk, metadata]. The answer's chunks, then an
        // empty ai message of the same id when the stream broke off and is
        // written again.
        const chunk = Array.isArray(data) ? data[0] : null;
        if (!chunk || typeof chunk !== 'object') return;
        if (chunk.type === 'ai' && str(chunk.content) === '') {
          this.#restartStream();
          return;
        }
        if (chunk.type !== 'AIMessageChunk' && chunk.type !== 'ai') return;
        if (this.streamID && chunk.id && chunk.id !== this.streamID) this.#restartStream();
        this.streamID = str(chunk.id);
        this.#appendToken(typeof chunk.content === 'string' ? chunk.content : '');
        break;
      }
      case 'values':
        if (data && typeof data === 'object') {
          const { __interrupt__: intr, ...values } = data;
          this.values = values;
          this.#progress(values);
          if (Array.isArray(intr) && intr.length && intr[0] && typeof intr[0] === 'object') {
            this.interrupt = intr[0].value && typeof intr[0].value === 'object' ? intr[0].value : null;
            if (this.interrupt) this.setStatus('needs-input');
          }
        }
        break;
      case 'updates': {
        const intr = data && typeof data === 'object' ? data.__interrupt__ : null;
        if (Array.isArray(intr) && intr.length && intr[0] && typeof intr[0].value === 'object' && intr[0].value) {
          this.interrupt = intr[0].value;
          this.setStatus('needs-input');
        }
        break;
      }
      case 'error':
        // A cancel ends its run with a CancelledError: no error to show.
        if (data?.error !== 'CancelledError') this.showError(str(data?.message) || str(data?.error) || 'The run reported an error.');
        break;
      case 'metadata':
        if (this.status === 'queued' || !this.status) this.setStatus('running');
        break;
      default:
      // Other modes are ignored: the page asks for these.
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

  /** clearErrors takes away the errors shown (a resumed run goes on). */
  clearErrors() {
    this.errors.clear();
    clear(this.errorEl);
    show(this.errorEl, false);
  }

  showError(message) {
    const msg = str(message).trim();
    if (!msg || this.errors.has(msg)) return;
    this.errors.add(msg);
    this.errorEl.append(el('p', {}, msg));
    show(this.errorEl);
  }

  #syncButtons() {
    show(this.cancelBtn, this.primary && !this.historic && ['queued', 'running'].includes(this.status));
    show(this.resumeBtn, this.canResume());
  }

  /** canResume says whether Resume applies: the turn stopped (cancelled or failed) with tasks left to run. */
  canResume() {
    return this.primary && !this.historic && this.pending && ['interrupted', 'failed'].includes(this.status);
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
    if (this.answerFinal) this.#resetAnswer(); // a new run of the turn writes a new answer
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
    this.streamID = '';
    this.answerFinal = false;
    this.report = null;
  }

  #progress(v) {
    const parts = [];
    if (Number(v.research_loop_count)) parts.push(plural(v.research_loop_count, 'loop', 'loops'));
    if (Number(v.steps)) parts.push(plural(v.steps, 'step', 'steps'));
    if (Number(v.gathered)) parts.push(plural(v.gathered, 'source', 'sources'));
    this.progressEl.textContent = isActive(this.status) ? parts.join(' · ') : '';
  }

  /**
   * renderValues replaces the streamed text by the turn's answer, rendered:
   * the last ai message of the state's values, with its sources. The
   * values are the report taken away (its markdown, or the answer).
   */
  renderValues(values) {
    if (!values || typeof values !== 'object') return;
    this.#resetAnswer();
    this.report = values;
    this.answerFinal = true;
    this.answer.removeAttribute('data-streaming');

    const isAgent = this.kind === 'agent';
    const answer = answerOf(values);
    const sources = Array.isArray(values.sources) ? values.sources.filter((s) => s && typeof s === 'object') : [];
    // The sources have a section of their own below: an answer's own list
    // of them (an agent's answer carries one) is not shown twice.
    const markdown = sources.length ? withoutSourcesList(answer) : answer;
    if (markdown.trim()) this.answer.append(renderMarkdown(parse(markdown), document, { headingOffset: 3, sources }));
    else this.answer.append(el('p', { class: 'muted' }, 'No answer was written.'));

    // Sources: numbered as the citations [n](url) number them.
    for (const s of sources) this.sources.append(sourceItem(s));
    show(this.sourcesSection, sources.length > 0);

    // What kept the answer from being complete.
    const notes = [];
    if (!answer.trim() && !isAgent) notes.push('This turn has no answer: the run stopped before it was written.');
    if (!isAgent && answer.trim() && sources.length === 0) {
      notes.push('This answer cites no source: nothing the research gathered supports it, so do not rely on it.');
    }
    if (isAgent) {
      const st = str(values.status);
      if (st && st !== 'success' && st !== 'answered') notes.push(`The agent stopped with status “${st}”.`);
    }
    if (notes.length) {
      this.noticeEl.textContent = notes.join(' ');
      show(this.noticeEl);
    }
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

  /** usage is what the turn's runs spent, from their cost events: {tokens, calls, cost} (cost null when unknown). */
  usage() {
    let tokens = 0;
    let calls = 0;
    let cost = 0;
    let known = true;
    for (const c of this.costs.values()) {
      tokens += Number(c.tokens) || 0;
      calls += Number(c.calls) || 0;
      if (typeof c.cost_usd === 'number') cost += c.cost_usd;
      else if (Number(c.calls)) known = false;
    }
    return { tokens, calls, cost: known ? cost : null, seen: this.costs.size > 0 };
  }

  #updateSummary() {
    const rep = this.report;
    if (!rep) return;
    const parts = [];
    const isAgent = this.kind === 'agent';
    if (isAgent) {
      if (rep.status) parts.push(str(rep.status));
      if (rep.steps !== undefined) parts.push(plural(rep.steps, 'step', 'steps'));
    }
    const u = this.usage();
    if (u.seen) {
      parts.push(`${thousands(u.tokens)} tokens`);
      parts.push(plural(u.calls, 'LLM call', 'LLM calls'));
    }
    // The turn's duration, from its first run's start to its last run's
    // end (a wait for a review included).
    const first = this.runs[0];
    const last = this.last;
    if (first && last && !isActive(this.status)) {
      const ms = Date.parse(last.updated_at) - Date.parse(first.created_at);
      if (ms > 0) parts.push(seconds(ms));
    }
    const cost = u.seen ? costText(null, u.cost, u.calls) : '';
    if (cost) parts.push(cost);
    if (!isAgent) {
      const n = Array.isArray(rep.sources) ? rep.sources.length : 0;
      parts.push(n ? `${plural(n, 'source', 'sources')} cited` : 'no source cited');
      if (Number(rep.dropped_citations)) parts.push(`${plural(rep.dropped_citations, 'citation', 'citations')} dropped`);
      if (Number(rep.research_loop_count)) parts.push(plural(rep.research_loop_count, 'loop', 'loops'));
    }
    this.summary.textContent = parts.join(' · ');
    this.summary.title = u.seen ? `${compact(u.tokens)} tokens` : '';
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
        text = this.kind === 'agent' ? 'The agent asks you a question (below).' : 'Waiting for your review of the search queries (below).';
        break;
      case 'done':
        text = this.answerFinal ? 'Answer ready.' : 'Done.';
        break;
      case 'failed':
        text = this.canResume() ? 'The run failed. Resume it to try its unfinished steps again.' : 'The run failed.';
        break;
      case 'interrupted':
        text = this.canResume() ? 'The run was cancelled. Resume it to go on.' : 'The run was cancelled.';
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
