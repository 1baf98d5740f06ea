// interrupt.js — the cards of a run that waits for its reader: the review
// of the proposed search queries, and the agent's question.
//
// A pause is a question to the reader, not an error: the card shows in the
// run's view right under its status (RunView.interruptSlot), is brought
// into view, and takes the focus. The reader's answer goes to onAnswer as
// the value of a command.resume: for a review, LangChain's HITL decisions
// ({decisions: [{type: approve | edit | reject, edited_action}]}, what
// Agent Chat UI sends); for the agent's question, the answer text. Queries and questions are untrusted text:
// they only become input values and text nodes.

import { $, el, clear, show } from './dom.js';

const str = (v) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));

export class InterruptCards {
  /**
   * onAnswer(resume) sends the answer (the command's resume value); home
   * is the element the cards go back before when no run shows them.
   */
  constructor({ onAnswer, home }) {
    this.onAnswer = onAnswer;
    this.home = home;
    this.key = ''; // the interrupt shown, so a repeat keeps the edits
    this.proposed = []; // the queries as the run proposed them
    this.seq = 0;
    this.review = $('review');
    this.reviewForm = $('review-form');
    this.reviewContext = $('review-context');
    this.reviewGap = $('review-gap');
    this.reviewQueries = $('review-queries');
    this.reviewAdd = $('review-add');
    this.reviewHint = $('review-hint');
    this.reviewApprove = $('review-approve');
    this.reviewStop = $('review-stop');
    this.question = $('agent-question');
    this.questionForm = $('agent-answer-form');
    this.questionText = $('agent-question-text');
    this.answer = $('agent-answer');
    this.send = $('agent-answer-send');
    this.#wire();
  }

  /** show shows what view's run waits for (its interrupt intr). */
  show(view, intr) {
    const key = `${view.id}:${JSON.stringify(intr)}`;
    if (key === this.key) return; // already shown: keep the edits
    this.key = key;
    // A review asks about the search queries; any other request (an agent's
    // question, or its request to run a tool, answered in words) is a question.
    const isReview = (intr.review && typeof intr.review === 'object') ||
      (Array.isArray(intr.action_requests) && intr.action_requests.some((a) => a && a.name === 'search_queries'));
    if (!isReview) {
      show(this.review, false);
      this.questionText.textContent = str(intr.question) || 'The agent needs an answer to go on.';
      this.answer.value = '';
      this.#present(view, this.question, this.answer);
      return;
    }
    // A review of the proposed search queries: deepgraph's request, or the
    // HITL request's search_queries action.
    let r = intr.review && typeof intr.review === 'object' ? intr.review : null;
    if (!r) {
      const action = (intr.action_requests || []).find((a) => a && a.name === 'search_queries');
      r = { queries: action?.args?.queries };
    }
    show(this.question, false);
    this.reviewContext.textContent =
      r.stage === 'follow_up'
        ? `The research found a gap after reflection ${Number(r.loop) || ''}. These follow-up searches are proposed; edit, add or remove them.`
        : 'These searches are proposed for your question; edit, add or remove them before the research starts.';
    this.reviewGap.textContent = r.knowledge_gap ? `Knowledge gap: ${str(r.knowledge_gap)}` : '';
    show(this.reviewGap, !!r.knowledge_gap);
    this.proposed = (Array.isArray(r.queries) ? r.queries : []).map(str);
    clear(this.reviewQueries);
    for (const q of this.proposed) this.#addQuery(q);
    this.reviewHint.textContent = '';
    this.#present(view, this.review, this.reviewApprove);
  }

  /** hide hides both cards. */
  hide() {
    this.key = '';
    show(this.review, false);
    show(this.question, false);
  }

  /**
   * park puts the cards back before home (hidden), out of any run view: a
   * view's DOM goes when another thread opens.
   */
  park() {
    this.hide();
    this.home.before(this.review, this.question);
  }

  /** busy disables the answer buttons while an answer is sent. */
  busy(on) {
    for (const b of [this.reviewApprove, this.reviewStop, this.reviewAdd, this.send]) b.disabled = on;
  }

  /** #present shows card in view's slot, in view, the focus on first. */
  #present(view, card, first) {
    view.interruptSlot.append(card);
    show(card);
    const calm = matchMedia('(prefers-reduced-motion: reduce)').matches;
    card.scrollIntoView({ block: 'nearest', behavior: calm ? 'auto' : 'smooth' });
    first?.focus({ preventScroll: true });
  }

  #addQuery(value = '') {
    const id = `review-query-${++this.seq}`;
    const input = el('input', { type: 'text', class: 'review-query', id, autocomplete: 'off', spellcheck: 'true' });
    input.value = value;
    const label = el('label', { for: id, class: 'visually-hidden' });
    const remove = el('button', { type: 'button', class: 'button small secondary review-remove' }, 'Remove');
    remove.addEventListener('click', () => {
      const li = remove.closest('li');
      const next = li.nextElementSibling || li.previousElementSibling;
      li.remove();
      this.#number();
      (next ? next.querySelector('input') : this.reviewAdd).focus();
    });
    this.reviewQueries.append(el('li', { class: 'review-item' }, label, input, remove));
    this.#number();
    return input;
  }

  #number() {
    [...this.reviewQueries.children].forEach((li, i) => {
      li.querySelector('label').textContent = `Query ${i + 1}`;
      li.querySelector('.review-remove').setAttribute('aria-label', `Remove query ${i + 1}`);
    });
  }

  #wire() {
    this.reviewAdd.addEventListener('click', () => this.#addQuery('').focus());
    // "Search these" (also Enter in a query field).
    this.reviewForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const queries = [...this.reviewQueries.querySelectorAll('input.review-query')].map((i) => i.value.trim()).filter(Boolean);
      if (!queries.length) {
        this.reviewHint.textContent = 'Add at least one query, or choose “Stop and write the answer”.';
        this.reviewAdd.focus();
        return;
      }
      const p = this.proposed;
      const unchanged = queries.length === p.length && queries.every((q, i) => q === p[i].trim());
      this.onAnswer(
        unchanged
          ? { decisions: [{ type: 'approve' }] }
          : { decisions: [{ type: 'edit', edited_action: { name: 'search_queries', args: { queries } } }] },
      );
    });
    this.reviewStop.addEventListener('click', () => this.onAnswer({ decisions: [{ type: 'reject' }] }));
    this.questionForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const answer = this.answer.value.trim();
      if (!answer) {
        this.answer.focus();
        return;
      }
      this.onAnswer(answer);
    });
  }
}
