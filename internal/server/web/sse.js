// sse.js — a text/event-stream client on fetch().
//
// EventSource cannot send an Authorization header, so the page reads the
// stream with fetch() and a ReadableStream reader and parses it here.
//
//   SSEParser  pure, incremental parser of the wire format (tested in Node).
//   streamRun  follows one run's stream of the Agent Server API: the POST
//              that starts the run (or the run's stream to join), then,
//              after a drop, the stream its Location header names, with
//              Last-Event-ID and a 1 s, 2 s, 4 s … 10 s backoff; it skips
//              events it already has, and stops when the server closes the
//              stream at the run's end.

/**
 * SSEParser turns chunks of text into events {id, event, data}. Lines are
 * separated by \n, \r\n or \r; a blank line dispatches the event; lines
 * starting with ":" are comments (pings); "data" lines are joined with
 * "\n". id is the last "id" field seen (a string) or null.
 */
export class SSEParser {
  constructor() {
    this.buffer = '';
    this.lastId = null;
    this.#reset();
  }

  #reset() {
    this.eventType = '';
    this.data = [];
    this.hasId = false;
  }

  /** feed parses a chunk and returns the events it completed. */
  feed(chunk) {
    this.buffer += chunk;
    const events = [];
    let start = 0;
    for (;;) {
      const nl = this.#lineEnd(start);
      if (nl < 0) break;
      const line = this.buffer.slice(start, nl);
      start = nl + (this.buffer[nl] === '\r' && this.buffer[nl + 1] === '\n' ? 2 : 1);
      const ev = this.#line(line);
      if (ev) events.push(ev);
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /**
   * end is called when the stream closes. As the SSE standard says, an
   * event not finished by a blank line is dropped: the connection may have
   * broken in its middle, and a reconnect with Last-Event-ID sends it again.
   */
  end() {
    this.buffer = '';
    this.#reset();
    return [];
  }

  // #lineEnd finds the next line terminator from start, or -1. A "\r" at the
  // very end of the buffer waits for the next chunk (it may be "\r\n").
  #lineEnd(start) {
    for (let i = start; i < this.buffer.length; i++) {
      const c = this.buffer[i];
      if (c === '\n') return i;
      if (c === '\r') return i + 1 < this.buffer.length ? i : -1;
    }
    return -1;
  }

  #line(line) {
    if (line === '') {
      // Blank line: dispatch what was collected, if any data came.
      const ev = this.data.length ? { id: this.lastId, event: this.eventType || 'message', data: this.data.join('\n') } : null;
      this.#reset();
      return ev;
    }
    if (line.startsWith(':')) return null; // comment, e.g. ": ping"
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\u0000')) this.lastId = value;
        break;
      default:
      // "retry" and unknown fields are ignored.
    }
    return null;
  }
}

/** backoff returns the wait before reconnect attempt n (0-based): 1 s, 2 s, 4 s, … 10 s. */
export function backoff(n) {
  return Math.min(10_000, 1000 * 2 ** n);
}

/** sleep waits ms, or less when signal aborts. */
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

const STALL_MS = 45_000; // three missed pings: the connection is dead

/**
 * streamRun reads a run's event stream until the run ends (the server
 * closes the stream then).
 *
 * options:
 *   url          the first request's URL: a POST …/runs/stream starting the
 *                run (with body), or a run's …/stream to join (GET)
 *   body         the POST's JSON body (none: the first request is a GET)
 *   base         the API's base path, which Location headers are relative to
 *   headers()    extra request headers (Authorization)
 *   lastEventId  the last event id already handled (0: from the start)
 *   signal       AbortSignal that stops everything
 *   onOpen(res)                   each response that opened a stream
 *                                 (Content-Location names the run)
 *   onEvent(event, data, id)      each new event, data decoded from JSON
 *   onConnection(state, info)     'open' | 'retry' (info: {delay}) | 'closed'
 *   shouldReconnect()             async; asked when the stream closed: true
 *                                 to reconnect (the run still runs)
 *   errorFrom(res)                async; turns a failed response into an Error
 *
 * It resolves with {reason, lastEventId, error?}: reason is 'closed' (the
 * run ended), 'aborted' or 'error'.
 */
export async function streamRun(options) {
  const { signal, onEvent, onOpen = () => {}, onConnection = () => {}, shouldReconnect = async () => false, base = '' } = options;
  const headers = options.headers || (() => ({}));
  let lastId = Number(options.lastEventId) || 0;
  let attempt = 0;
  let post = options.body !== undefined; // the first request starts the run
  let url = options.url;

  while (!signal?.aborted) {
    // One connection, with a watchdog that aborts it when nothing (not even
    // a heartbeat) arrives for STALL_MS.
    const conn = new AbortController();
    const stop = () => conn.abort();
    signal?.addEventListener('abort', stop, { once: true });
    let watchdog = setTimeout(stop, STALL_MS);
    const alive = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(stop, STALL_MS);
    };
    let retryAfter = 0;
    let opened = false;
    try {
      const h = { Accept: 'text/event-stream', ...headers() };
      const init = { headers: h, signal: conn.signal, cache: 'no-store' };
      if (post) {
        init.method = 'POST';
        h['Content-Type'] = 'application/json';
        init.body = JSON.stringify(options.body);
      } else if (lastId > 0) h['Last-Event-ID'] = String(lastId);
      const res = await fetch(url, init);
      if (!res.ok) {
        const err = options.errorFrom ? await options.errorFrom(res) : new Error(`stream: HTTP ${res.status}`);
        // 429, 502–504 on a join: the server is busy or restarting, try
        // again later. A refused POST started no run: say why.
        if (post || (res.status !== 429 && (res.status < 502 || res.status > 504))) return { reason: 'error', error: err, lastEventId: lastId };
        retryAfter = (err.retryAfter || 0) * 1000;
        throw err;
      }
      opened = true;
      // From now on, a reconnect joins the run's stream where Location says.
      const loc = res.headers.get('Location');
      if (loc) url = base + loc;
      post = false;
      onOpen(res);
      onConnection('open');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = new SSEParser();
      for (;;) {
        const { value, done } = await reader.read();
        const events = done ? parser.end() : parser.feed(value);
        alive();
        for (const ev of events) {
          const id = Number(ev.id);
          if (ev.id !== null && Number.isFinite(id)) {
            if (id <= lastId) continue; // already handled (a replay after a reconnect)
            lastId = id;
          }
          attempt = 0; // data flows again: reset the backoff
          let data = null;
          try {
            data = ev.data ? JSON.parse(ev.data) : null;
          } catch {
            data = { text: ev.data };
          }
          onEvent(ev.event, data, lastId);
        }
        if (done) break;
      }
      // The server closed the stream: the run ended, unless the connection
      // was cut (a proxy, a restart) while it runs.
      onConnection('closed');
      if (signal?.aborted) break;
      if (!(await shouldReconnect())) return { reason: 'closed', lastEventId: lastId };
    } catch (err) {
      if (signal?.aborted) break;
      // A POST that never answered may or may not have started its run:
      // there is no Location to join, so say so.
      if (post && !opened) return { reason: 'error', error: err, lastEventId: lastId };
      // A network drop, a stall or a busy server: reconnect below.
    } finally {
      clearTimeout(watchdog);
      signal?.removeEventListener('abort', stop);
    }
    const delay = Math.max(backoff(attempt++), Math.min(retryAfter, 60_000));
    onConnection('retry', { delay });
    await sleep(delay, signal);
  }
  return { reason: 'aborted', lastEventId: lastId };
}
