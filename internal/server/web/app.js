// app.js — the page of `research serve`: ask a question, follow the run
// live, read the cited answer, browse past runs, review queries, answer an
// agent's question.
//
// It speaks the server's one API, the LangGraph Agent Server API (under
// API_BASE): the assistants' metadata says what a run may choose; a
// question is a run streamed on a thread (POST …/runs/stream with the
// values, messages-tuple, updates and custom modes), joined again after a
// drop at its Location with Last-Event-ID; a review or an agent's question
// is the thread's interrupt, answered by a run with command.resume; a run
// cancelled, stopped or failed with tasks left (the thread's state has a
// next) is resumed by a run with input null, which continues them; past
// runs are POST /threads/search, a thread's turns its runs and history.
//
// Modules:
//   api.js       JSON calls, the bearer token, API errors
//   sse.js       the event-stream client (fetch + reader, reconnects)
//   runview.js   one run's view (timeline, answer, sources, status)
//   interrupt.js the review and agent-question cards, in the run's view
//   report.js    a report copied or downloaded
//   timeline.js  one timeline entry per activity event
//   markdown.js  the safe Markdown parser and DOM builder
//   dom.js       DOM helpers (createElement + text only)
//   format.js    numbers, durations, relative times
//
// Data from the server (titles, questions, answers, queries, tool output)
// is untrusted: it only ever reaches the page as text nodes or as
// http(s) hrefs checked by safeHref.

import { api, auth, authHeaders, errorFrom, paths, API_BASE, ApiError } from './api.js';
import { streamRun } from './sse.js';
import { RunView, isActive, pageStatus, questionOf } from './runview.js';
import { InterruptCards } from './interrupt.js';
import { $, el, clear, show, truncate, oneLine } from './dom.js';
import { relativeTime, absoluteTime, plural } from './format.js';

const PAGE = 20; // threads per page of the past-runs list
const DEFAULT_EFFORTS = [
  { name: 'low', queries: 1, loops: 1 },
  { name: 'medium', queries: 3, loops: 3 },
  { name: 'high', queries: 5, loops: 10 },
];
const str = (v) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));

// ---------------------------------------------------------------------------
// Elements and state

const ui = {
  body: document.body,
  main: $('main'),
  drawerToggle: $('drawer-toggle'),
  drawerClose: $('drawer-close'),
  sidebar: $('sidebar'),
  backdrop: $('drawer-backdrop'),
  threadList: $('thread-list'),
  threadsMore: $('threads-more'),
  threadsEmpty: $('threads-empty'),
  threadsRefresh: $('threads-refresh'),
  newThread: $('new-thread'),
  serverInfo: $('server-info'),
  errorBox: $('error-box'),
  errorMessage: $('error-message'),
  errorDismiss: $('error-dismiss'),
  authForm: $('auth-form'),
  authToken: $('auth-token'),
  authMessage: $('auth-message'),
  threadTitle: $('thread-title'),
  welcome: $('welcome'),
  runs: $('runs'),
  askForm: $('ask-form'),
  question: $('question'),
  effort: $('effort'),
  effortField: $('effort-field'),
  kindField: $('kind-field'),
  backend: $('backend'),
  backendField: $('backend-field'),
  reviewMode: $('review-mode'),
  reviewModeField: $('review-mode-field'),
  ask: $('ask'),
  askHint: $('ask-hint'),
};

const app = {
  info: null,
  thread: null, // the open thread (without its runs)
  wantThread: '', // the thread being opened (reopened after a login)
  views: [], // RunView of each run of the open thread, oldest first
  primary: null, // the newest run's view
  session: new AbortController(), // aborted when another thread opens
  threadsNext: null,
  threadsToken: 0,
  submitting: false,
};

// The callbacks each RunView uses.
const actions = {
  cancel: (view) => cancelRun(view),
  resume: (view) => continueRun(view),
  loadActivity: (view) => replayActivity(view),
  onChange: (view) => {
    if (view === app.primary) syncPrimary();
  },
};

// The review and the agent's question: their answers resume the open run.
const cards = new InterruptCards({ onAnswer: (resume) => app.primary && resumeRun(app.primary, resume), home: ui.askForm });

// ---------------------------------------------------------------------------
// Errors and the access token

function showError(err) {
  if (!err || err.name === 'AbortError') return;
  const msg = typeof err === 'string' ? err : err.message || String(err);
  ui.errorMessage.textContent = msg;
  show(ui.errorBox);
}

function hideError() {
  show(ui.errorBox, false);
  ui.errorMessage.textContent = '';
}

// Every 401 lands here (api.js and the stream's errorFrom).
auth.onRequired = () => {
  const wasShown = !ui.authForm.hidden;
  ui.authMessage.textContent = auth.token
    ? 'The server refused this access token. Enter the right one.'
    : 'This server needs an access token. It is kept for this browser tab only.';
  show(ui.authForm);
  if (!wasShown) ui.authToken.focus();
};

ui.authForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const token = ui.authToken.value.trim();
  if (!token) {
    ui.authToken.focus();
    return;
  }
  auth.token = token;
  ui.authToken.value = '';
  show(ui.authForm, false);
  hideError();
  start();
});

ui.errorDismiss.addEventListener('click', () => {
  hideError();
  ui.question.focus();
});

// ---------------------------------------------------------------------------
// Server information: efforts, kinds, backends

// The graphs whose threads the page shows (the server may serve others,
// such as the planning flow, to other clients).
const PAGE_KINDS = ['research', 'agent'];

// The assistants the server serves; the research assistant's metadata
// "deepgraph" holds the server's version and what a run may choose.
async function loadInfo() {
  let found;
  try {
    found = await api('POST', paths.assistants(), { limit: 100 });
  } catch (err) {
    if (err.status !== 401) showError(err);
    return;
  }
  const assistants = Array.isArray(found) ? found.filter((a) => a && typeof a === 'object') : [];
  const research = assistants.find((a) => a.graph_id === 'research');
  const md = research?.metadata?.deepgraph;
  app.info = md && typeof md === 'object' ? { ...md } : {};
  app.info.kinds = assistants.map((a) => str(a.graph_id)).filter((g) => PAGE_KINDS.includes(g));

  const efforts = Array.isArray(app.info.efforts) && app.info.efforts.length ? app.info.efforts : DEFAULT_EFFORTS;
  const chosen = ui.effort.dataset.touched ? ui.effort.value : str(app.info.default_effort) || 'medium';
  clear(ui.effort);
  for (const e of efforts) {
    const name = str(typeof e === 'object' && e ? e.name : e);
    if (!name) continue;
    // "medium (3 queries, 3 loops)": queries per round, research loops at most.
    const detail = typeof e === 'object' && e && e.queries !== undefined ? ` (${plural(e.queries, 'query', 'queries')}, ${plural(e.loops, 'loop', 'loops')})` : '';
    ui.effort.append(el('option', { value: name }, name + detail));
  }
  ui.effort.value = chosen;
  if (ui.effort.selectedIndex < 0) ui.effort.selectedIndex = 0;

  const kinds = Array.isArray(app.info.kinds) ? app.info.kinds : ['research'];
  show(ui.kindField, kinds.includes('agent'));
  if (!kinds.includes('agent')) document.getElementById('kind-research').checked = true;

  const backends = Array.isArray(app.info.backends) ? app.info.backends.map(str).filter(Boolean) : [];
  clear(ui.backend);
  for (const b of backends) ui.backend.append(el('option', { value: b }, b));
  if (app.info.default_backend) ui.backend.value = str(app.info.default_backend);
  show(ui.backendField, backends.length > 1);

  if (Number(app.info.max_question) > 0) ui.question.maxLength = Number(app.info.max_question);

  const models = Array.isArray(app.info.models) ? app.info.models.map(str).filter(Boolean) : [];
  // The version as the server gives it ("v1.2.3", "devel"), then the models.
  ui.serverInfo.textContent = [str(app.info.version).trim(), models.join(', ')].filter(Boolean).join(' · ');
  ui.serverInfo.title = ui.serverInfo.textContent;
  syncKind();
}

function selectedKind() {
  const checked = ui.kindField.querySelector('input[name="kind"]:checked');
  return !ui.kindField.hidden && checked && checked.value === 'agent' ? 'agent' : 'research';
}

// Effort and review are research settings: off for an agent task.
function syncKind() {
  const research = selectedKind() === 'research';
  ui.effort.disabled = !research;
  ui.reviewMode.disabled = !research;
  ui.effortField.classList.toggle('is-disabled', !research);
  ui.reviewModeField.classList.toggle('is-disabled', !research);
  ui.question.placeholder = research ? 'What do you want researched? e.g. Who won Euro 2024 and who scored the most goals?' : 'Describe the task for the agent…';
  updateAskHint();
}

// ---------------------------------------------------------------------------
// Past runs (the threads list)

async function loadThreads(reset = false) {
  const token = ++app.threadsToken;
  const shown = ui.threadList.children.length;
  const offset = reset ? 0 : app.threadsNext ?? shown;
  const limit = reset ? Math.min(100, Math.max(PAGE, shown)) : PAGE;
  ui.threadsMore.disabled = true;
  let res;
  try {
    res = await api('POST', paths.threadsSearch(), { limit, offset, sort_by: 'updated_at', sort_order: 'desc' });
  } catch (err) {
    if (token === app.threadsToken && err.status !== 401) showError(err);
    return;
  } finally {
    ui.threadsMore.disabled = false;
  }
  if (token !== app.threadsToken) return; // a newer load won
  if (reset) clear(ui.threadList);
  const threads = Array.isArray(res) ? res : [];
  const known = new Set([...ui.threadList.children].map((li) => li.dataset.threadId));
  for (const t of threads) {
    if (!t || typeof t !== 'object' || known.has(str(t.thread_id))) continue;
    // Only the threads that ran (a question, a task) are past runs, and
    // only those of the graphs the page shows (a flow's thread, started by
    // another client, is not).
    if (!t.metadata || typeof t.metadata !== 'object' || !PAGE_KINDS.includes(str(t.metadata.graph_id))) continue;
    known.add(str(t.thread_id));
    ui.threadList.append(threadItem(t));
  }
  app.threadsNext = threads.length === limit ? offset + limit : null;
  show(ui.threadsMore, app.threadsNext !== null);
  show(ui.threadsEmpty, ui.threadList.children.length === 0);
  markCurrentThread();
}

// The statuses of a thread, as the page names them.
const THREAD_STATUS = { idle: 'idle', busy: 'busy', interrupted: 'needs-input', error: 'failed' };

/** threadTitle is a thread's first question (or its agent's task). */
function threadTitle(t) {
  const v = t.values && typeof t.values === 'object' ? t.values : {};
  if (typeof v.task === 'string' && v.task) return v.task;
  const msgs = Array.isArray(v.messages) ? v.messages : [];
  const first = msgs.find((m) => m && m.type === 'human');
  return first ? str(first.content) : '';
}

function threadItem(t) {
  const id = str(t.thread_id);
  const status = THREAD_STATUS[str(t.status)] || 'idle';
  const updated = str(t.updated_at || t.created_at);
  const title = truncate(oneLine(threadTitle(t)), 140) || 'Untitled thread';
  const kind = str(t.metadata.graph_id);
  const button = el(
    'button',
    { type: 'button', class: 'thread-open' },
    el('span', { class: 'thread-name' }, title),
    el(
      'span',
      { class: 'thread-meta' },
      el('span', { class: `badge status-${status.replace(/[^a-z-]/g, '')}` }, status),
      kind === 'agent' ? el('span', { class: 'thread-kind' }, 'agent') : null,
      updated ? el('time', { class: 'rel-time', datetime: updated, title: absoluteTime(updated) }, relativeTime(updated)) : null,
    ),
  );
  button.addEventListener('click', () => {
    closeDrawer(false);
    openThread(id, { focus: true });
  });
  return el('li', { class: 'thread-item', dataset: { threadId: id } }, button);
}

function markCurrentThread() {
  const current = app.thread ? app.thread.thread_id : '';
  for (const li of ui.threadList.children) {
    const button = li.querySelector('button');
    const on = li.dataset.threadId === current;
    li.classList.toggle('is-current', on);
    if (on) button.setAttribute('aria-current', 'true');
    else button.removeAttribute('aria-current');
  }
}

// Relative times ("5 minutes ago") age while the page is open.
setInterval(() => {
  for (const t of document.querySelectorAll('time.rel-time')) t.textContent = relativeTime(t.getAttribute('datetime'));
}, 30_000);

ui.threadsMore.addEventListener('click', () => loadThreads(false));
ui.threadsRefresh.addEventListener('click', () => loadThreads(true));

// ---------------------------------------------------------------------------
// The drawer (the past-runs list on narrow screens)

const wide = window.matchMedia('(min-width: 900px)');

function openDrawer() {
  ui.body.classList.add('drawer-open');
  ui.drawerToggle.setAttribute('aria-expanded', 'true');
  show(ui.backdrop);
  (ui.threadList.querySelector('button') || ui.drawerClose).focus();
}

function closeDrawer(returnFocus = true) {
  if (!ui.body.classList.contains('drawer-open')) return;
  ui.body.classList.remove('drawer-open');
  ui.drawerToggle.setAttribute('aria-expanded', 'false');
  show(ui.backdrop, false);
  if (returnFocus && !wide.matches) ui.drawerToggle.focus();
}

ui.drawerToggle.addEventListener('click', () => (ui.body.classList.contains('drawer-open') ? closeDrawer() : openDrawer()));
ui.drawerClose.addEventListener('click', () => closeDrawer());
ui.backdrop.addEventListener('click', () => closeDrawer());
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && ui.body.classList.contains('drawer-open')) closeDrawer();
});
wide.addEventListener('change', () => closeDrawer(false));

// ---------------------------------------------------------------------------
// Opening a thread

/** newSession stops the streams of the thread shown until now. */
function newSession() {
  app.session.abort();
  app.session = new AbortController();
  return app.session;
}

function setHash(threadId) {
  const want = threadId ? `#thread=${encodeURIComponent(threadId)}` : '';
  if (location.hash !== want) {
    if (want) location.hash = want;
    else history.replaceState(null, '', location.pathname + location.search);
  }
}

function hashThread() {
  const m = /^#thread=(.+)$/.exec(location.hash);
  if (!m) return '';
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return '';
  }
}

function resetView(thread) {
  newSession();
  app.thread = thread;
  app.views = [];
  app.primary = null;
  cards.park(); // out of the run views about to go
  clear(ui.runs);
  cards.hide();
  setTitle(thread ? thread.title : '');
  show(ui.welcome, true);
  setHash(thread ? thread.thread_id : '');
  markCurrentThread();
  syncPrimary();
}

function setTitle(title) {
  const t = truncate(oneLine(title), 200);
  ui.threadTitle.textContent = t || (app.thread ? 'Untitled thread' : 'New research');
  document.title = t ? `${truncate(t, 60)} · deepgraph research` : 'deepgraph research';
}

/** newThread shows an empty page; the next question starts a thread. */
function newThread() {
  app.wantThread = '';
  resetView(null);
  ui.question.focus();
}

/** firstInterrupt is the value of the interrupt a thread waits on, or null. */
function firstInterrupt(thread) {
  const all = thread && typeof thread.interrupts === 'object' && thread.interrupts ? Object.values(thread.interrupts) : [];
  for (const list of all) {
    if (!Array.isArray(list)) continue;
    for (const i of list) if (i && i.value && typeof i.value === 'object') return i.value;
  }
  return null;
}

/** isResume says whether a run answered an interrupt (command.resume). */
function isResume(run) {
  const c = run?.kwargs?.command;
  return !!(c && typeof c === 'object' && c.resume !== undefined && c.resume !== null);
}

/** isContinue says whether a run continued its thread: no input, no command (Resume). */
function isContinue(run) {
  const k = run?.kwargs;
  return !!k && typeof k === 'object' && (k.input === undefined || k.input === null) && (k.command === undefined || k.command === null);
}

/**
 * turnsOf groups a thread's runs (oldest first) into turns: a run that
 * asked, then the runs that answered its interrupts or continued it.
 */
function turnsOf(runs) {
  const turns = [];
  for (const r of runs) {
    if (!r || typeof r !== 'object') continue;
    if ((isResume(r) || isContinue(r)) && turns.length) turns[turns.length - 1].push(r);
    else turns.push([r]);
  }
  return turns;
}

async function openThread(id, { focus = false } = {}) {
  app.wantThread = id;
  const session = newSession();
  const { signal } = session;
  let thread, runs, history;
  try {
    [thread, runs, history] = await Promise.all([
      api('GET', paths.thread(id), undefined, { signal }),
      api('GET', paths.runs(id), undefined, { signal }),
      api('POST', paths.history(id), { limit: 1000 }, { signal }),
    ]);
  } catch (err) {
    if (err.name === 'AbortError' || signal.aborted) return;
    if (err.status === 404) {
      showError('That thread no longer exists.');
      if (hashThread() === id) setHash('');
    } else if (err.status !== 401) showError(err);
    return;
  }
  if (signal.aborted || !thread || typeof thread !== 'object') return;
  const kind = thread.metadata?.graph_id === 'agent' ? 'agent' : 'research';
  resetView({ thread_id: str(thread.thread_id), kind, title: threadTitle(thread) });
  // The values each run ended with: its newest checkpoint (history is
  // newest first).
  const ended = new Map();
  for (const h of Array.isArray(history) ? history : []) {
    const rid = h && h.metadata ? str(h.metadata.run_id) : '';
    if (rid && !ended.has(rid)) ended.set(rid, h.values);
  }
  const waiting = firstInterrupt(thread);
  // Tasks left to run in the thread's newest checkpoint: a Resume goes on.
  const newestState = Array.isArray(history) && history.length ? history[0] : null;
  const pending = !!newestState && Array.isArray(newestState.next) && newestState.next.length > 0;
  const turns = turnsOf((Array.isArray(runs) ? runs : []).slice().reverse()); // the API lists newest first
  turns.forEach((turn, i) => {
    const newest = i === turns.length - 1;
    const view = addRunView({ thread_id: id, kind, question: questionOf(turn[0]), runs: turn }, { historic: !newest });
    const lastRun = turn[turn.length - 1];
    const status = pageStatus(lastRun.status, newest && !!waiting);
    if (newest && (status === 'queued' || status === 'running')) {
      view.setStatus(status);
      return;
    }
    view.applyEnd(status, newest ? waiting : null, newest ? thread.values : ended.get(str(lastRun.run_id)), newest && pending);
  });
  // The timelines and costs come from the runs' streams: replayed for the
  // turns that ended, followed live for a run that runs.
  for (const view of app.views) {
    if (view === app.primary && isActive(view.status) && view.status !== 'needs-input') {
      view.live = true;
      replayActivity(view, view.runs.slice(0, -1)).then(() => follow(view, { run: view.last }));
    } else replayActivity(view);
  }
  syncPrimary();
  if (focus) ui.threadTitle.focus();
}

/** addRunView appends a turn's view; the newest turn is the primary one. */
function addRunView(turn, { historic = false } = {}) {
  const view = new RunView(turn, actions, { historic });
  app.views.push(view);
  ui.runs.append(view.root);
  show(ui.welcome, false);
  if (!historic) {
    if (app.primary) app.primary.setPrimary(false);
    app.primary = view;
    view.setPrimary(true);
  }
  return view;
}

/** dropView takes away the newest view (its run could not start). */
function dropView(view) {
  if (app.views[app.views.length - 1] !== view) return;
  app.views.pop();
  view.root.remove();
  app.primary = null;
  const prev = app.views[app.views.length - 1];
  if (prev) {
    prev.historic = false;
    app.primary = prev;
    prev.setPrimary(true);
  }
  show(ui.welcome, app.views.length === 0);
  syncPrimary();
}

window.addEventListener('hashchange', () => {
  const id = hashThread();
  if (id && (!app.thread || app.thread.thread_id !== id)) openThread(id);
  else if (!id && app.thread) newThread();
});

ui.newThread.addEventListener('click', () => {
  closeDrawer(false);
  newThread();
});

// ---------------------------------------------------------------------------
// Following a run's stream

// The stream modes the page reads: the state's values (the answer, its
// sources and an interrupt at the end), the answer's chunks, the updates
// (an interrupt) and deepgraph's custom events (timeline, costs).
const STREAM_MODES = ['values', 'messages-tuple', 'updates', 'custom'];

/** runBody is the body of a run of kind on a thread, with more fields. */
function runBody(kind, more) {
  return { assistant_id: kind, stream_mode: STREAM_MODES, stream_resumable: true, on_disconnect: 'continue', ...more };
}

async function fetchRun(threadId, runId, signal) {
  try {
    return await api('GET', paths.run(threadId, runId), undefined, { signal });
  } catch (err) {
    if (err.name !== 'AbortError' && err.status !== 401 && err.status !== 0) showError(err);
    return null;
  }
}

/**
 * follow reads a run's stream into the view until the run ends: a run it
 * starts (opts.body, POST …/runs/stream) or one it joins (opts.run). After
 * a drop it joins again at the stream's Location with Last-Event-ID, so
 * no event shows twice. opts.started(ok) is called once the run started,
 * or could not.
 */
async function follow(view, { body, run, started = () => {} } = {}) {
  if (view.following) {
    started(false);
    return;
  }
  view.following = true;
  const token = (view.followToken = (view.followToken || 0) + 1);
  const { signal } = app.session;
  const tid = view.run.thread_id;
  let runId = run ? str(run.run_id) : '';
  let ok = false;
  const begin = (id) => {
    if (runId && ok) return;
    runId = runId || id;
    ok = true;
    if (!view.runs.some((r) => r.run_id === runId)) view.addRun({ run_id: runId, thread_id: tid, status: 'pending', kwargs: body || {} });
    started(true);
  };
  try {
    const res = await streamRun({
      url: API_BASE + (body ? paths.runStream(tid) : paths.join(tid, runId)),
      body,
      base: API_BASE,
      headers: authHeaders,
      signal,
      errorFrom,
      onOpen: (r) => {
        const m = /\/runs\/([^/]+)$/.exec(r.headers.get('Content-Location') || '');
        if (m) begin(decodeURIComponent(m[1]));
        else if (runId) begin(runId);
      },
      onEvent: (type, data, id) => {
        view.lastEventId = id;
        if (type === 'metadata' && data && typeof data.run_id === 'string') begin(data.run_id);
        onRunEvent(view, type, data, runId);
      },
      onConnection: (state, info) => view.setConnection(state === 'retry' ? `Connection lost. Reconnecting in ${Math.round(info.delay / 1000)} s…` : ''),
      // The stream closed: go on while the run still runs (a cut connection).
      shouldReconnect: async () => {
        const r = runId ? await fetchRun(tid, runId, signal) : null;
        return !!r && (r.status === 'pending' || r.status === 'running');
      },
    });
    if (signal.aborted || res.reason === 'aborted') return;
    if (res.reason === 'error') {
      if (!ok) started(false);
      if (res.error?.status === 401) return; // the token form is up; start() opens the thread again
      showError(res.error instanceof ApiError ? res.error : new ApiError(0, 'network', 'The run could not be started: the server did not answer.'));
      if (!ok) return;
    }
    // The stream is over: an answer to the run's interrupt may start the
    // next run while this one's end is read.
    view.following = false;
    await settle(view, runId, signal);
  } finally {
    if (view.followToken === token) {
      view.following = false;
      view.setConnection('');
    }
  }
}

/**
 * settle shows how a run ended: its status, the interrupt its thread waits
 * on, the state's values (the answer and its sources) and, for a run that
 * did not finish, whether tasks are left to run (Resume).
 */
async function settle(view, runId, signal) {
  const tid = view.run.thread_id;
  let run, thread, state;
  try {
    [run, thread] = await Promise.all([api('GET', paths.run(tid, runId), undefined, { signal }), api('GET', paths.thread(tid), undefined, { signal })]);
    if (run && (run.status === 'interrupted' || run.status === 'error')) state = await api('GET', paths.state(tid), undefined, { signal });
  } catch (err) {
    if (err.name !== 'AbortError' && err.status !== 401) showError(err);
    return;
  }
  if (signal.aborted || !run || !thread) return;
  view.addRun(run);
  // A newer run of the turn (an answer sent meanwhile) shows its own end.
  if (view.following || view.last?.run_id !== runId) return;
  const waiting = firstInterrupt(thread);
  const pending = !!state && Array.isArray(state.next) && state.next.length > 0;
  view.applyEnd(pageStatus(run.status, !!waiting), waiting, thread.values, pending);
  if (view === app.primary) loadThreads(true);
}

function onRunEvent(view, type, data, runId) {
  view.handle(type, data, runId);
  if (view !== app.primary) return;
  // A run followed live raises its errors in the alert too; a cancel is
  // no error.
  if (type === 'error' && view.live && data?.error !== 'CancelledError') showError(str(data?.message) || 'The run reported an error.');
}

/**
 * replayActivity fills a turn's timeline and costs from its runs' streams
 * (their custom events), by default all of them.
 */
async function replayActivity(view, runs = view.runs) {
  view.activityLoaded = true;
  view.clearTimeline();
  const { signal } = app.session;
  for (const r of runs) {
    if (signal.aborted) return;
    const rid = str(r.run_id);
    const res = await streamRun({
      url: `${API_BASE}${paths.join(view.run.thread_id, rid)}?stream_mode=custom`,
      base: API_BASE,
      headers: authHeaders,
      signal,
      errorFrom,
      onEvent: (type, data) => view.handle(type, data, rid),
    });
    if (res.reason === 'error' && res.error?.status !== 401 && res.error?.status !== 404) showError(res.error);
  }
}

// ---------------------------------------------------------------------------
// The open run: page state, buttons, review and question forms

const PAGE_STATE = { queued: 'running', running: 'running', 'needs-input': 'needs-input', done: 'done', failed: 'failed', interrupted: 'interrupted' };

function syncPrimary() {
  const view = app.primary;
  ui.body.dataset.state = (view && PAGE_STATE[view.status]) || 'idle';
  if (view && view.status === 'needs-input' && view.interrupt) cards.show(view, view.interrupt);
  else cards.hide();
  updateAskHint();
}

/** cancelRun cancels the turn's running run; its stream then ends. */
async function cancelRun(view) {
  const last = view.last;
  if (!last) return;
  view.cancelBtn.disabled = true;
  try {
    await api('POST', paths.cancel(view.run.thread_id, last.run_id), {});
  } catch (err) {
    showError(err);
  } finally {
    view.cancelBtn.disabled = false;
  }
}

/**
 * continueRun resumes a turn that stopped with tasks left (cancelled,
 * stopped by a shutdown, failed): a run with input null, which continues
 * the thread's pending tasks, with the turn's settings, followed as any.
 */
async function continueRun(view) {
  if (view.following || !view.canResume()) return;
  const status = view.status;
  view.resumeBtn.disabled = true;
  view.live = true;
  view.pending = false;
  view.clearErrors();
  hideError(); // the failure it goes on from
  view.setStatus('queued');
  const configurable = view.runs[0]?.kwargs?.config?.configurable;
  const more = { input: null };
  if (configurable && typeof configurable === 'object') more.config = { configurable };
  const ok = await new Promise((started) => follow(view, { body: runBody(view.kind, more), started }));
  view.resumeBtn.disabled = false;
  if (!ok && app.primary === view) {
    // Refused: the turn stays as it was.
    view.pending = true;
    view.setStatus(status);
  }
}

/** resumeRun answers the interrupt the turn waits on: a run with command.resume. */
async function resumeRun(view, resume) {
  if (view.following) return;
  cards.busy(true);
  const interrupt = view.interrupt;
  view.live = true;
  // The answer is taken: never show the same question again.
  view.setStatus('queued');
  const ok = await new Promise((started) => follow(view, { body: runBody(view.kind, { command: { resume } }), started }));
  cards.busy(false);
  if (!ok && app.primary === view) {
    // Refused: the question stands.
    view.interrupt = interrupt;
    view.setStatus('needs-input');
  }
}

// ---------------------------------------------------------------------------
// Asking

/**
 * followUpTarget is the open thread when a question of this kind goes on
 * it: a research thread whose newest run is over takes follow-ups; an agent
 * thread takes one task; an empty thread takes anything.
 */
function followUpTarget(kind) {
  const t = app.thread;
  if (!t) return null;
  if (!app.views.length) return !t.kind || t.kind === kind ? t : null;
  if (kind !== 'research' || (t.kind && t.kind !== 'research')) return null;
  if (app.primary && isActive(app.primary.status)) return null;
  return t;
}

function updateAskHint() {
  const keys = 'Enter to ask, Shift+Enter for a new line.';
  let where = '';
  if (app.thread && app.views.length) {
    where = followUpTarget(selectedKind()) ? 'Follow-up on this thread. ' : 'This starts a new thread. ';
  }
  ui.askHint.textContent = where + keys;
}

ui.question.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && !e.altKey && !e.ctrlKey && !e.metaKey) {
    e.preventDefault();
    ui.askForm.requestSubmit();
  }
});

ui.effort.addEventListener('change', () => (ui.effort.dataset.touched = 'true'));
for (const radio of ui.kindField.querySelectorAll('input[name="kind"]')) radio.addEventListener('change', syncKind);

ui.askForm.addEventListener('submit', async (e) => {
  e.preventDefault();
  if (app.submitting) return;
  const input = ui.question.value.trim();
  if (!input) {
    ui.question.focus();
    return;
  }
  const max = Number(app.info?.max_question) || 0;
  if (max && input.length > max) {
    showError(`The question is too long: ${input.length} characters, at most ${max}.`);
    return;
  }
  const kind = selectedKind();
  // What the run chooses, as its config.configurable.
  const configurable = {};
  if (kind === 'research') {
    configurable.effort = ui.effort.value;
    configurable.review = ui.reviewMode.checked;
  }
  if (!ui.backendField.hidden && ui.backend.value) configurable.backend = ui.backend.value;

  app.submitting = true;
  ui.ask.disabled = true;
  ui.askForm.setAttribute('aria-busy', 'true');
  try {
    let thread = followUpTarget(kind);
    if (!thread) {
      const t = await api('POST', paths.newThread(), { metadata: {} });
      thread = { thread_id: str(t?.thread_id), kind, title: '' };
      app.wantThread = thread.thread_id;
      resetView(thread);
    }
    const view = addRunView({ thread_id: thread.thread_id, kind, question: input, runs: [] });
    view.live = true;
    view.setStatus('queued');
    syncPrimary();
    const body = runBody(kind, { input: { messages: [{ type: 'human', content: input }] }, config: { configurable } });
    const ok = await new Promise((started) => follow(view, { body, started }));
    if (!ok) {
      dropView(view); // the question stays in its box
      return;
    }
    ui.question.value = '';
    hideError();
    if (!app.thread.kind) app.thread.kind = kind;
    if (!app.thread.title) {
      app.thread.title = input;
      setTitle(input);
    }
    view.root.scrollIntoView({ block: 'start', behavior: matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth' });
    loadThreads(true);
  } catch (err) {
    if (err.status !== 401) showError(err);
  } finally {
    app.submitting = false;
    ui.ask.disabled = false;
    ui.askForm.removeAttribute('aria-busy');
    updateAskHint();
  }
});

// ---------------------------------------------------------------------------
// Start

/** start loads what the page shows; it runs again after a login. */
async function start() {
  await Promise.all([loadInfo(), loadThreads(true)]);
  const id = hashThread() || app.wantThread || (app.thread && app.thread.thread_id);
  if (id) openThread(id);
}

syncKind();
syncPrimary();
start();
