// The page side of the browser tool. It runs in an isolated world of the
// tab's main frame ("deepgraph"): it shares the page's DOM but not its
// JavaScript, so the page's scripts can neither see nor change what is
// kept here. The snapshot numbers the interactive elements of the page (and
// of its same-origin frames) in document order and keeps them in
// globalThis.__dg, where the element actions find them by number.
//
// Everything it returns is cut to size here, so that a page of any size
// gives a bounded answer.
(() => {
  const SELECTOR = [
    'a[href]', 'button', 'input', 'select', 'textarea', 'summary',
    '[role=button]', '[role=link]', '[role=checkbox]', '[role=radio]', '[role=tab]',
    '[role=menuitem]', '[role=menuitemcheckbox]', '[role=menuitemradio]', '[role=option]',
    '[role=switch]', '[role=textbox]', '[role=searchbox]', '[role=combobox]', '[role=slider]',
    '[role=spinbutton]', '[contenteditable=""]', '[contenteditable=true]', '[onclick]',
    '[tabindex]:not([tabindex="-1"])',
  ].join(',');
  const MAX_FRAME_DEPTH = 3;
  const MAX_TEXT_NODES = 20000;

  const clip = (s, n) => {
    s = String(s == null ? '' : s).replace(/\s+/g, ' ').trim();
    return s.length > n ? s.slice(0, n - 1) + '…' : s;
  };

  // rectOf is el's box in the coordinates of the top window: a box in a
  // frame is moved by the frames' offsets.
  const rectOf = (el) => {
    const r = el.getBoundingClientRect();
    let x = r.left, y = r.top;
    let win = el.ownerDocument.defaultView;
    while (win && win.frameElement) {
      const fr = win.frameElement.getBoundingClientRect();
      x += fr.left; y += fr.top;
      win = win.frameElement.ownerDocument.defaultView;
    }
    return { x, y, w: r.width, h: r.height };
  };

  const shown = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width <= 0 && r.height <= 0) return false;
    const st = el.ownerDocument.defaultView.getComputedStyle(el);
    return st.visibility !== 'hidden' && st.display !== 'none' && parseFloat(st.opacity || '1') > 0;
  };

  const roleOf = (el) => {
    const explicit = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (explicit) return explicit;
    const tag = el.tagName.toLowerCase();
    switch (tag) {
      case 'a': return 'link';
      case 'button': case 'summary': return 'button';
      case 'select': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'textarea': return 'textbox';
      case 'input': {
        const t = (el.type || 'text').toLowerCase();
        if (['button', 'submit', 'reset', 'image'].includes(t)) return 'button';
        if (t === 'checkbox' || t === 'radio' || t === 'range' || t === 'file') return t === 'range' ? 'slider' : t;
        if (t === 'search') return 'searchbox';
        if (t === 'number') return 'spinbutton';
        return 'textbox';
      }
    }
    if (el.isContentEditable) return 'textbox';
    return 'clickable';
  };

  const labelOf = (el) => {
    const aria = el.getAttribute('aria-label');
    if (aria) return aria;
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const t = by.split(/\s+/).map((id) => el.ownerDocument.getElementById(id)).filter(Boolean).map((n) => n.textContent).join(' ');
      if (t.trim()) return t;
    }
    if (el.labels && el.labels.length) {
      // A label's own words, without the text of the controls inside it
      // (a select's options).
      return Array.from(el.labels).map((l) => {
        const c = l.cloneNode(true);
        c.querySelectorAll('select,textarea,input,button').forEach((n) => n.remove());
        return c.textContent;
      }).join(' ');
    }
    return '';
  };

  const nameOf = (el, role) => {
    const tag = el.tagName.toLowerCase();
    if (tag === 'input' && ['button', 'submit', 'reset'].includes((el.type || '').toLowerCase())) return el.value || labelOf(el) || el.type;
    if (tag === 'input' || tag === 'textarea' || tag === 'select') {
      return labelOf(el) || el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('name') || '';
    }
    let t = labelOf(el) || el.innerText || el.textContent || '';
    if (!t.trim()) {
      const img = el.querySelector && el.querySelector('img[alt]');
      t = (img && img.getAttribute('alt')) || el.getAttribute('title') || '';
    }
    return t;
  };

  const cssEscape = (s) => (window.CSS && CSS.escape ? CSS.escape(s) : s.replace(/[^\w-]/g, '\\$&'));

  // locatorOf is a short CSS selector for el, when a simple one is unique
  // in its document.
  const locatorOf = (el) => {
    const doc = el.ownerDocument;
    const tag = el.tagName.toLowerCase();
    const unique = (sel) => {
      try { return doc.querySelectorAll(sel).length === 1; } catch (e) { return false; }
    };
    if (el.id && el.id.length <= 40 && unique('#' + cssEscape(el.id))) return '#' + cssEscape(el.id);
    for (const a of ['name', 'aria-label', 'data-testid', 'placeholder']) {
      const v = el.getAttribute(a);
      if (v && v.length <= 40) {
        const sel = `${tag}[${a}="${v.replace(/["\\]/g, '\\$&')}"]`;
        if (unique(sel)) return sel;
      }
    }
    const href = tag === 'a' && el.getAttribute('href');
    if (href && href.length <= 60) {
      const sel = `a[href="${href.replace(/["\\]/g, '\\$&')}"]`;
      if (unique(sel)) return sel;
    }
    return '';
  };

  // collect lists the interactive elements of doc and of its same-origin
  // frames, in document order, leaving out those inside another one.
  const collect = (doc, depth, out) => {
    let nodes;
    try { nodes = doc.querySelectorAll(SELECTOR + ',iframe,frame'); } catch (e) { return 0; }
    let crossOrigin = 0;
    const taken = [];
    for (const el of nodes) {
      const tag = el.tagName.toLowerCase();
      if (tag === 'iframe' || tag === 'frame') {
        let inner = null;
        try { inner = el.contentDocument; } catch (e) { inner = null; }
        if (inner && depth < MAX_FRAME_DEPTH) crossOrigin += collect(inner, depth + 1, out);
        else if (!inner) crossOrigin++;
        continue;
      }
      if (tag === 'input' && (el.type || '').toLowerCase() === 'hidden') continue;
      if (!shown(el)) continue;
      // An element inside one already taken (a span with onclick in a
      // link) is part of it.
      const last = taken[taken.length - 1];
      if (last && last.contains(el) && !['input', 'select', 'textarea', 'button'].includes(tag)) continue;
      taken.push(el);
      out.push(el);
    }
    return crossOrigin;
  };

  const describe = (el, i, vh, vw) => {
    const tag = el.tagName.toLowerCase();
    const role = roleOf(el);
    const r = rectOf(el);
    const d = {
      i, tag, role,
      name: clip(nameOf(el, role), 80),
      in_view: r.y + r.h > 0 && r.y < vh && r.x + r.w > 0 && r.x < vw,
      y: Math.round(r.y),
      locator: locatorOf(el),
    };
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (tag === 'input' && type) d.type = type;
    if (el.disabled) d.disabled = true;
    if (tag === 'a') d.href = clip(el.getAttribute('href'), 100);
    if (tag === 'input' && (type === 'checkbox' || type === 'radio')) d.checked = !!el.checked;
    else if (tag === 'input' && type === 'password') d.value = el.value ? '(hidden)' : '';
    else if (tag === 'input' || tag === 'textarea') d.value = clip(el.value, 60);
    else if (el.isContentEditable) d.value = clip(el.innerText, 60);
    if (tag === 'select') {
      const opts = Array.from(el.options);
      d.value = clip(opts.filter((o) => o.selected).map((o) => o.text).join(', '), 60);
      d.options = opts.slice(0, 12).map((o) => clip(o.text, 30));
      d.more_options = Math.max(0, opts.length - 12);
    }
    if (role === 'checkbox' || role === 'switch' || role === 'radio' || role === 'tab' || role === 'option') {
      const aria = el.getAttribute('aria-checked') || el.getAttribute('aria-selected');
      if (aria) d.checked = aria === 'true';
    }
    return d;
  };

  // texts returns the page's visible text before, inside and after the
  // viewport, each cut to its share of budget.
  const texts = (vh, budget) => {
    const above = [], view = [], below = [];
    let aboveLen = 0, viewLen = 0, belowLen = 0;
    const share = { view: Math.floor(budget * 0.6), above: Math.floor(budget * 0.15), below: Math.floor(budget * 0.25) };
    const body = document.body;
    if (!body) return { above: '', view: '', below: '' };
    const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => {
        const p = n.parentElement;
        if (!p || !n.nodeValue.trim()) return NodeFilter.FILTER_REJECT;
        const tag = p.tagName;
        if (tag === 'SCRIPT' || tag === 'STYLE' || tag === 'NOSCRIPT' || tag === 'TEMPLATE') return NodeFilter.FILTER_REJECT;
        return NodeFilter.FILTER_ACCEPT;
      },
    });
    const rects = new Map();
    let n, count = 0;
    while ((n = walker.nextNode()) && count++ < MAX_TEXT_NODES) {
      const p = n.parentElement;
      let r = rects.get(p);
      if (r === undefined) {
        r = shown(p) ? p.getBoundingClientRect() : null;
        rects.set(p, r);
      }
      if (!r) continue;
      const t = n.nodeValue.replace(/\s+/g, ' ').trim();
      if (r.bottom <= 0) {
        above.push(t); aboveLen += t.length + 1;
        while (aboveLen > share.above && above.length > 1) aboveLen -= above.shift().length + 1;
      } else if (r.top < vh) {
        if (viewLen < share.view) { view.push(t); viewLen += t.length + 1; }
      } else if (belowLen < share.below) {
        below.push(t); belowLen += t.length + 1;
      } else if (viewLen >= share.view) {
        break;
      }
    }
    const tail = (s, k) => (s.length > k ? '…' + s.slice(s.length - k + 1) : s);
    return { above: tail(above.join(' '), share.above), view: clip(view.join(' '), share.view), below: clip(below.join(' '), share.below) };
  };

  const dg = {
    els: [],

    // snapshot numbers the interactive elements and describes the page:
    // at most maxEls elements (those in view first, then the nearest), and
    // about textBudget characters of text.
    snapshot(maxEls, textBudget) {
      const els = [];
      const crossOrigin = collect(document, 0, els);
      this.els = els;
      const vh = window.innerHeight, vw = window.innerWidth;
      const described = els.map((el, i) => ({ el, i, r: rectOf(el) }));
      const inView = described.filter((d) => d.r.y + d.r.h > 0 && d.r.y < vh);
      const rest = described.filter((d) => !(d.r.y + d.r.h > 0 && d.r.y < vh));
      rest.sort((a, b) => {
        const da = a.r.y >= vh ? a.r.y - vh : -(a.r.y + a.r.h) + vh * 0.5;
        const db = b.r.y >= vh ? b.r.y - vh : -(b.r.y + b.r.h) + vh * 0.5;
        return da - db;
      });
      const pick = inView.slice(0, maxEls).concat(rest.slice(0, Math.max(0, maxEls - inView.length)));
      pick.sort((a, b) => a.i - b.i);
      const doc = document.scrollingElement || document.documentElement;
      return {
        url: location.href,
        title: clip(document.title, 200),
        scroll_y: Math.round(window.scrollY),
        viewport_h: vh,
        viewport_w: vw,
        page_h: Math.round(doc ? doc.scrollHeight : vh),
        total: els.length,
        cross_origin_frames: crossOrigin,
        elements: pick.map((d) => describe(d.el, d.i, vh, vw)),
        text: texts(vh, textBudget),
      };
    },

    // element returns element i of the last snapshot, or a reason it is
    // not usable.
    element(i) {
      const el = this.els[i];
      if (!el) return { error: `there is no element [${i}] on this page (the last state numbered ${this.els.length})` };
      if (!el.isConnected) return { error: `element [${i}] is no longer on the page (the page changed since its state was read)` };
      return { el };
    },

    label(el) {
      const role = roleOf(el);
      const name = clip(nameOf(el, role), 60);
      return name ? `${role} "${name}"` : role;
    },

    // point scrolls element i into view and returns the point to click:
    // its centre, or where it shows when something covers the centre.
    point(i) {
      const { el, error } = this.element(i);
      if (error) return { error };
      if (el.disabled) return { error: `element [${i}] (${this.label(el)}) is disabled` };
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      const r = rectOf(el);
      if (r.w <= 0 || r.h <= 0) return { error: `element [${i}] (${this.label(el)}) is not visible` };
      const cx = r.x + r.w / 2, cy = r.y + r.h / 2;
      const hit = (x, y) => {
        let d = document, node = null, ox = 0, oy = 0;
        for (let k = 0; k <= MAX_FRAME_DEPTH; k++) {
          node = d.elementFromPoint(x - ox, y - oy);
          if (!node || (node.tagName !== 'IFRAME' && node.tagName !== 'FRAME')) break;
          let inner = null;
          try { inner = node.contentDocument; } catch (e) { inner = null; }
          if (!inner) break;
          const fr = node.getBoundingClientRect();
          ox += fr.left; oy += fr.top; d = inner;
        }
        return node;
      };
      for (const [x, y] of [[cx, cy], [r.x + 2, r.y + 2], [r.x + r.w - 2, r.y + r.h - 2]]) {
        const h = hit(x, y);
        if (h && (h === el || el.contains(h) || h.contains(el) && h.tagName === 'LABEL')) {
          return { x, y, label: this.label(el) };
        }
      }
      const cover = hit(cx, cy);
      return { x: cx, y: cy, label: this.label(el), covered: cover ? this.label(cover) + ` <${cover.tagName.toLowerCase()}>` : 'another element' };
    },

    // clickScript clicks element i with a script, for an element covered
    // by another.
    clickScript(i) {
      const { el, error } = this.element(i);
      if (error) return { error };
      el.click();
      return { label: this.label(el) };
    },

    // focus prepares element i for typing: it focuses it and selects its
    // content, so that the text typed replaces it.
    focus(i) {
      const { el, error } = this.element(i);
      if (error) return { error };
      const tag = el.tagName.toLowerCase();
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      const label = this.label(el);
      if (tag === 'select') return { error: `element [${i}] (${label}) is a list: use select_option` };
      if (tag === 'input' && type === 'file') return { error: `element [${i}] (${label}) is a file upload: uploading files is refused` };
      if (tag === 'input' && ['checkbox', 'radio', 'button', 'submit', 'reset', 'image', 'range', 'color'].includes(type)) {
        return { error: `element [${i}] (${label}) takes no text: click it instead` };
      }
      const editable = tag === 'textarea' || tag === 'input' || el.isContentEditable;
      if (!editable) return { error: `element [${i}] (${label}) is not a text field` };
      if (el.disabled || el.readOnly) return { error: `element [${i}] (${label}) is read-only` };
      el.scrollIntoView({ block: 'center', behavior: 'instant' });
      el.focus();
      if (tag === 'textarea' || tag === 'input') {
        try { el.select(); } catch (e) { /* number inputs have no selection */ }
        if (el.value && el.selectionStart === el.selectionEnd) {
          el.value = '';
          el.dispatchEvent(new Event('input', { bubbles: true }));
        }
      } else {
        const range = el.ownerDocument.createRange();
        range.selectNodeContents(el);
        const sel = el.ownerDocument.defaultView.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
      }
      return { label, focused: el.ownerDocument.activeElement === el };
    },

    // value is the value of element i after typing (passwords hidden).
    value(i) {
      const { el, error } = this.element(i);
      if (error) return { error };
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (type === 'password') return { value: '(hidden)' };
      return { value: clip(el.isContentEditable ? el.innerText : el.value, 200) };
    },

    // select picks the option of list i whose text or value is text (case
    // and spacing ignored), as a user would, with input and change events.
    select(i, text) {
      const { el, error } = this.element(i);
      if (error) return { error };
      const label = this.label(el);
      if (el.tagName.toLowerCase() !== 'select') return { error: `element [${i}] (${label}) is not a list: click it, or type into it` };
      if (el.disabled) return { error: `element [${i}] (${label}) is disabled` };
      const want = String(text).replace(/\s+/g, ' ').trim().toLowerCase();
      const opts = Array.from(el.options);
      const opt = opts.find((o) => o.text.replace(/\s+/g, ' ').trim().toLowerCase() === want) ||
        opts.find((o) => o.value.toLowerCase() === want);
      if (!opt) {
        return { error: `element [${i}] (${label}) has no option "${clip(text, 60)}"; its options: ${opts.slice(0, 30).map((o) => '"' + clip(o.text, 40) + '"').join(', ')}` };
      }
      if (opt.disabled) return { error: `the option "${clip(opt.text, 60)}" of element [${i}] is disabled` };
      el.focus();
      opt.selected = true;
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
      return { label, chosen: clip(opt.text, 60) };
    },

    // waitFor resolves when the page shows text (or has an element matching
    // selector), or after ms milliseconds; it watches the DOM for changes
    // instead of polling.
    waitFor(text, selector, ms) {
      const want = text ? String(text).replace(/\s+/g, ' ').trim().toLowerCase() : '';
      const found = () => {
        if (selector) {
          try { return !!document.querySelector(selector); } catch (e) { return 'bad selector: ' + e.message; }
        }
        return (document.body ? document.body.innerText : '').replace(/\s+/g, ' ').toLowerCase().includes(want);
      };
      return new Promise((resolve) => {
        const first = found();
        if (first) return resolve(first === true ? { found: true } : { error: first });
        let done = false;
        const finish = (v) => {
          if (done) return;
          done = true;
          obs.disconnect();
          clearTimeout(timer);
          resolve(v);
        };
        const obs = new MutationObserver(() => { if (found() === true) finish({ found: true }); });
        obs.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
        const timer = setTimeout(() => finish({ found: false }), ms);
      });
    },

    // quiet resolves once at least least milliseconds have passed and the DOM has
    // not changed for ms milliseconds, or after max milliseconds: what a
    // script renders just after a load or a click is in the state.
    quiet(ms, least, max) {
      const start = performance.now();
      return new Promise((resolve) => {
        let timer = setTimeout(check, Math.max(ms, least));
        const stop = setTimeout(done, max);
        const obs = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(check, ms); });
        obs.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
        function check() {
          const wait = least - (performance.now() - start);
          if (wait > 0) timer = setTimeout(check, wait);
          else done();
        }
        function done() {
          obs.disconnect();
          clearTimeout(timer);
          clearTimeout(stop);
          resolve(true);
        }
      });
    },

    // html is the rendered document, cut at max characters.
    html(max) {
      const s = document.documentElement ? document.documentElement.outerHTML : '';
      return { html: s.length > max ? s.slice(0, max) : s, cut: s.length > max, title: document.title, url: location.href };
    },

    // scroll scrolls the page down (or up) by amount pixels, or by most
    // of a screen when amount is 0.
    scroll(amount, down) {
      const dy = (amount > 0 ? amount : Math.round(window.innerHeight * 0.8)) * (down ? 1 : -1);
      const before = window.scrollY;
      window.scrollBy({ top: dy, behavior: 'instant' });
      return { moved: Math.round(window.scrollY - before) };
    },
  };
  // Chromium keeps one world of a name per document: a new install keeps
  // the numbering of the last snapshot.
  if (globalThis.__dg) dg.els = globalThis.__dg.els;
  globalThis.__dg = dg;
  return true;
})()
