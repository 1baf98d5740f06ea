// timeline.js — one <li data-kind="…"> per `activity` event of a run.
//
// Everything shown comes from the event (queries, labels, thoughts, tool
// output: untrusted) and is set as text through el().

import { el, truncate, oneLine } from './dom.js';
import { compact, seconds, plural } from './format.js';

const str = (v) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));
const list = (v) => (Array.isArray(v) ? v.map(str).filter((s) => s !== '') : []);

/** quoteList shows queries as chips. */
function queryChips(queries) {
  if (!queries.length) return null;
  // Spans, not a nested list: every <li> under #timeline is an entry.
  return el('div', { class: 'chips' }, queries.map((q) => el('span', { class: 'chip', title: q }, truncate(oneLine(q), 120))));
}

/** clipped shows long text in a <details> whose summary is its first line. */
function clipped(text, summaryMax, cls) {
  const t = str(text);
  if (!t) return null;
  const first = truncate(oneLine(t), summaryMax);
  if (first === t) return el('p', { class: cls }, t);
  return el('details', { class: `clip ${cls}` }, el('summary', {}, first), el('pre', { class: 'clip-body' }, t));
}

/**
 * render returns {title, body[], tone} for an activity: the entry's
 * headline, the nodes below it, and a tone for its marker (ok, warn, bad,
 * pending, muted).
 */
function render(a) {
  const kind = str(a.kind);
  switch (kind) {
    case 'generating_queries':
      return { title: 'Generating search queries', tone: 'pending' };
    case 'queries': {
      const qs = list(a.queries);
      if (!qs.length) return { title: 'No queries to search: the answer is written from what was gathered', tone: 'muted' };
      return { title: `Search queries (${qs.length})`, body: [queryChips(qs)] };
    }
    case 'searching':
      return { title: `Searching “${truncate(oneLine(a.query), 100)}”`, tone: 'pending' };
    case 'searched': {
      const labels = list(a.labels);
      return {
        title: `Searched “${truncate(oneLine(a.query), 100)}”`,
        tone: Number(a.sources) > 0 ? 'ok' : 'warn',
        body: [
          el('p', { class: 'tl-detail' }, plural(a.sources, 'source', 'sources'), labels.length ? ` · ${labels.map((l) => truncate(oneLine(l), 40)).join(', ')}` : ''),
        ],
      };
    }
    case 'reflecting':
      return { title: 'Reflecting on the findings', tone: 'pending' };
    case 'reflected': {
      const r = a.reflection && typeof a.reflection === 'object' ? a.reflection : null;
      const loop = Number(a.loop) || '';
      if (!r) return { title: `Reflection ${loop}`.trim(), tone: 'muted' };
      const follow = list(a.queries).length ? list(a.queries) : list(r.follow_up_queries);
      const sufficient = !!r.is_sufficient;
      const body = [];
      if (!sufficient && str(r.knowledge_gap)) body.push(el('p', { class: 'tl-detail' }, el('span', { class: 'tl-label' }, 'Knowledge gap: '), str(r.knowledge_gap)));
      if (!sufficient && follow.length) body.push(el('p', { class: 'tl-detail tl-label' }, 'Follow-up queries:'), queryChips(follow));
      if (!sufficient && !follow.length) body.push(el('p', { class: 'tl-detail' }, 'Answering with what was found.'));
      return { title: `Reflection ${loop}: ${sufficient ? 'sufficient' : 'not sufficient'}`, tone: sufficient ? 'ok' : 'warn', body };
    }
    case 'finalizing':
      return { title: 'Writing the answer', tone: 'pending' };
    case 'answered': {
      const cited = Number(a.cited) > 0;
      return {
        title: cited ? 'Answered' : 'Answered without citing any source',
        tone: cited ? 'ok' : 'warn',
        body: [el('p', { class: 'tl-detail' }, `${cited ? `${plural(a.cited, 'source', 'sources')} cited` : 'no source cited'}, ${plural(a.dropped, 'citation', 'citations')} dropped`)],
      };
    }
    case 'failed':
      return {
        title: `${str(a.node) || 'A step'} failed`,
        tone: 'bad',
        body: [clipped(a.error, 200, 'tl-detail tl-error')],
      };
    case 'review': {
      const qs = list(a.queries);
      return { title: `Waiting for a review of ${plural(qs.length, 'query', 'queries')}`, tone: 'warn', body: [queryChips(qs)] };
    }

    // Agent runs.
    case 'agent_think': {
      const calls = Array.isArray(a.calls) ? a.calls : [];
      const body = [clipped(a.thought, 240, 'tl-detail tl-thought')];
      if (calls.length) {
        body.push(
          el('div', { class: 'tool-calls' }, calls.map((c) => {
            const args = typeof c?.arguments === 'string' ? c.arguments : JSON.stringify(c?.arguments ?? '');
            return el('div', { class: 'tool-call' }, '→ ', el('code', { class: 'tool-name' }, truncate(oneLine(c?.name), 40)), ' ', el('code', { class: 'tool-args', title: truncate(args, 1000) }, truncate(oneLine(args), 200)));
          })),
        );
      }
      return { title: `Step ${Number(a.step) || ''}`.trim(), body };
    }
    case 'agent_act': {
      const failed = !!a.failed;
      const dur = a.duration_ms !== undefined ? ` · ${seconds(a.duration_ms)}` : '';
      return {
        title: `${failed ? '✗' : '✓'} ${truncate(oneLine(a.tool), 40)}${dur}`,
        tone: failed ? 'bad' : 'ok',
        body: [clipped(a.output, 120, 'tl-detail tl-output')],
      };
    }
    case 'agent_nudge':
      return { title: 'Nudged: the agent repeated itself and was told to change strategy', tone: 'warn' };
    case 'agent_done': {
      const status = str(a.status);
      return { title: `Done: ${status}`, tone: status === 'success' || status === 'answered' ? 'ok' : 'warn' };
    }
    default:
      // A kind this page does not know: show the server's own line.
      return { title: truncate(oneLine(a.text) || kind || 'Activity', 300), tone: 'muted' };
  }
}

/** activityEntry builds the <li> of one activity event. */
export function activityEntry(a) {
  const kind = str(a?.kind) || 'unknown';
  const { title, body = [], tone = '' } = render(a || {});
  const meta = [];
  if (a?.elapsed_ms !== undefined) meta.push(el('span', { class: 'tl-time', title: 'elapsed' }, seconds(a.elapsed_ms)));
  if (a?.tokens !== undefined) meta.push(el('span', { class: 'tl-tokens', title: `${Number(a.tokens) || 0} tokens so far` }, `${compact(a.tokens)} tok`));
  return el(
    'li',
    { class: `tl-entry${tone ? ` tone-${tone}` : ''}`, dataset: { kind } },
    el('span', { class: 'tl-marker', 'aria-hidden': 'true' }),
    el('div', { class: 'tl-body' }, el('div', { class: 'tl-head' }, el('span', { class: 'tl-title' }, title), meta.length ? el('span', { class: 'tl-meta' }, meta) : null), body),
  );
}
