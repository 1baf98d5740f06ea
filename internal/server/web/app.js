// app.js — the page of `research serve`: ask a question, follow the run
// live, read the cited answer, browse past runs, review queries, answer an
// agent's question.
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

import { api, auth, authHeaders, errorFrom, paths } from './api.js';
import { streamRun, sleep, backoff } from './sse.js';
import { RunView, isActive } from './runview.js';
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
  resume: (view) => resumeRun(view, {}),
  loadActivity: (view) => replayActivity(view),
  onChange: (view) => {
    if (view === app.primary) syncPrimary();
  },
};

// The review and the agent's question: their answers resume the open run.
const cards = new InterruptCards({ onAnswer: (body) => app.primary && resumeRun(app.primary, body), home: ui.askForm });

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

async function loadInfo() {
  let info;
  try {
    info = await api('GET', paths.info());
  } catch (err) {
    if (err.status !== 401) showError(err);
    return;
  }
  app.info = info && typeof info === 'object' ? info : {};

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
    res = await api('GET', paths.threads(limit, offset));
  } catch (err) {
    if (token === app.threadsToken && err.status !== 401) showError(err);
    return;
  } finally {
    ui.threadsMore.disabled = false;
  }
  if (token !== app.threadsToken) return; // a newer load won
  if (reset) clear(ui.threadList);
  const known = new Set([...ui.threadList.children].map((li) => li.dataset.threadId));
  for (const t of Array.isArray(res?.threads) ? res.threads : []) {
    if (!t || typeof t !== 'object' || known.has(str(t.thread_id))) continue;
    known.add(str(t.thread_id));
    ui.threadList.append(threadItem(t));
  }
  app.threadsNext = typeof res?.next_offset === 'number' ? res.next_offset : null;
  show(ui.threadsMore, app.threadsNext !== null);
  show(ui.threadsEmpty, ui.threadList.children.length === 0);
  markCurrentThread();
}

function threadItem(t) {
  const id = str(t.thread_id);
  const status = str(t.status) || 'idle';
  const updated = str(t.updated || t.created);
  const title = truncate(oneLine(t.title), 140) || 'Untitled thread';
  const runs = Number(t.run_count) || 0;
  const button = el(
    'button',
    { type: 'button', class: 'thread-open' },
    el('span', { class: 'thread-name' }, title),
    el(
      'span',
      { class: 'thread-meta' },
      el('span', { class: `badge status-${status.replace(/[^a-z-]/g, '')}` }, status),
      t.kind === 'agent' ? el('span', { class: 'thread-kind' }, 'agent') : null,
      runs > 1 ? el('span', {}, `${runs} runs`) : null,
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

async function openThread(id, { focus = false } = {}) {
  app.wantThread = id;
  const session = newSession();
  let thread;
  try {
    thread = await api('GET', paths.thread(id), undefined, { signal: session.signal });
  } catch (err) {
    if (err.name === 'AbortError' || session.signal.aborted) return;
    if (err.status === 404) {
      showError('That thread no longer exists.');
      if (hashThread() === id) setHash('');
    } else if (err.status !== 401) showError(err);
    return;
  }
  if (session.signal.aborted || !thread || typeof thread !== 'object') return;
  const runs = Array.isArray(thread.runs) ? thread.runs.filter((r) => r && typeof r === 'object') : [];
  const { runs: _runs, values: _values, ...meta } = thread;
  resetView(meta);
  runs.forEach((run, i) => {
    const last = i === runs.length - 1;
    const view = addRunView(run, { historic: !last });
    if (!last && !run.report && !isActive(run.status)) loadReport(view);
  });
  if (app.primary) {
    app.primary.live = isActive(app.primary.status);
    follow(app.primary); // the replay rebuilds the timeline and the answer
  }
  syncPrimary();
  if (focus) ui.threadTitle.focus();
}

/** addRunView appends a run's view; the newest run is the primary one. */
function addRunView(run, { historic = false } = {}) {
  const view = new RunView(run, actions, { historic });
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

async function fetchRun(view, signal) {
  try {
    return await api('GET', paths.run(view.run.thread_id, view.id), undefined, { signal });
  } catch (err) {
    if (err.name !== 'AbortError' && err.status !== 401 && err.status !== 0) showError(err);
    return null;
  }
}

async function loadReport(view) {
  const run = await fetchRun(view, app.session.signal);
  if (run) view.applyRun(run);
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

/**
 * follow reads the view's run stream until the run stops (done, failed,
 * interrupted or waiting for input). It starts after view.lastEventId, so
 * a reopened stream never repeats an entry.
 */
async function follow(view) {
  if (view.following) return;
  view.following = true;
  const { signal } = app.session;
  let idle = 0;
  try {
    while (!signal.aborted) {
      view.reopen = false;
      const before = view.lastEventId;
      const res = await streamRun({
        url: paths.stream(view.run.thread_id, view.id),
        headers: authHeaders,
        lastEventId: view.lastEventId,
        signal,
        errorFrom,
        onEvent: (type, data, id) => {
          view.lastEventId = id;
          onRunEvent(view, type, data);
        },
        onConnection: (state, info) => view.setConnection(state === 'retry' ? `Connection lost. Reconnecting in ${Math.round(info.delay / 1000)} s…` : ''),
        // The server closed without an `end`: go on only while the run runs.
        shouldReconnect: async () => {
          const run = await fetchRun(view, signal);
          if (run) view.applyRun(run, { report: false });
          return !run || run.status === 'queued' || run.status === 'running';
        },
      });
      if (signal.aborted || res.reason === 'aborted') return;
      if (res.reason === 'error') {
        if (res.error?.status === 401) return; // the token form is up; start() follows again
        showError(res.error);
        // No stream (e.g. its events are gone): show what the API knows.
        const run = await fetchRun(view, signal);
        if (run && !signal.aborted) view.applyRun(run);
        return;
      }
      // The stream ended: take the run's own status (and its report, when
      // the stream did not carry one).
      const run = await fetchRun(view, signal);
      if (signal.aborted) return;
      if (run) view.applyRun(run);
      if (view === app.primary) loadThreads(true);
      // Go on when the run was resumed meanwhile, or when the `end` was an
      // older one (a replay of a run resumed since).
      const stale = run && (run.status === 'queued' || run.status === 'running' || (res.reason === 'end' && res.status && res.status !== run.status));
      if (!view.reopen && !stale) return;
      idle = view.lastEventId > before ? 0 : idle + 1;
      if (idle > 6) return;
      if (idle > 1) await sleep(backoff(idle - 2), signal);
    }
  } finally {
    view.following = false;
    view.setConnection('');
  }
}

function onRunEvent(view, type, data) {
  view.handle(type, data);
  if (view !== app.primary) return;
  // A run followed live raises its errors in the alert too.
  if (type === 'error' && view.live) showError(str(data?.message) || 'The run reported an error.');
}

/** replayActivity fills an earlier run's timeline from its stream. */
async function replayActivity(view) {
  view.clearTimeline();
  const { signal } = app.session;
  // A run resumed after a pause has several `end` events: read on until
  // the one that matches the run's status (a few rounds at most).
  for (let round = 0; round < 8 && !signal.aborted; round++) {
    const res = await streamRun({
      url: paths.stream(view.run.thread_id, view.id),
      headers: authHeaders,
      lastEventId: view.lastEventId,
      signal,
      errorFrom,
      onEvent: (type, data, id) => {
        view.lastEventId = id;
        view.handle(type, data); // historic views keep only activity events
      },
      shouldReconnect: async () => false,
    });
    if (res.reason === 'error' && res.error?.status !== 401) showError(res.error);
    if (res.reason !== 'end' || !res.status || res.status === view.status) return;
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

async function cancelRun(view) {
  view.cancelBtn.disabled = true;
  try {
    const run = await api('POST', paths.cancel(view.run.thread_id, view.id), {});
    view.applyRun(run, { report: false });
    loadThreads(true);
  } catch (err) {
    showError(err);
  } finally {
    view.cancelBtn.disabled = false;
  }
}

/** resumeRun posts an answer (or {} for an interrupted run) and follows on. */
async function resumeRun(view, body) {
  cards.busy(true);
  view.resumeBtn.disabled = true;
  try {
    const run = await api('POST', paths.resume(view.run.thread_id, view.id), body);
    view.live = true;
    view.interrupt = null;
    // The answer is taken: never show the same question again.
    view.applyRun({ ...run, status: run?.status === 'needs-input' || !run?.status ? 'queued' : run.status, interrupt: undefined }, { report: false });
    cards.hide();
    view.reopen = true;
    if (!view.following) follow(view);
    loadThreads(true);
  } catch (err) {
    showError(err);
  } finally {
    cards.busy(false);
    view.resumeBtn.disabled = false;
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
  const body = { kind, input };
  if (kind === 'research') {
    body.effort = ui.effort.value;
    body.review = ui.reviewMode.checked;
  }
  if (!ui.backendField.hidden && ui.backend.value) body.backend = ui.backend.value;

  app.submitting = true;
  ui.ask.disabled = true;
  ui.askForm.setAttribute('aria-busy', 'true');
  try {
    let thread = followUpTarget(kind);
    if (!thread) {
      thread = await api('POST', paths.newThread(), {});
      app.wantThread = str(thread.thread_id);
      resetView({ ...thread });
    }
    const run = await api('POST', paths.runs(thread.thread_id), body);
    ui.question.value = '';
    hideError();
    if (!app.thread.kind) app.thread.kind = kind;
    if (!app.thread.title) {
      app.thread.title = input;
      setTitle(input);
    }
    const view = addRunView(run);
    view.live = true;
    syncPrimary();
    view.root.scrollIntoView({ block: 'start', behavior: matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth' });
    follow(view);
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
