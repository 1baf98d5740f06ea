// markdown.js — a small, safe Markdown renderer for model-written answers.
//
// Two separate halves:
//   parse(src)               → a plain tree of {type, children, text, href, …}
//                              objects; pure, no DOM, testable with Node.
//   renderMarkdown(tree, …)  → DOM nodes built with createElement and text
//                              nodes only (never innerHTML).
//
// Safety rules (the answer is untrusted text):
//   - raw HTML is not parsed: "<script>" stays the literal text "<script>";
//   - a link gets an href only when its URL parses as an absolute http: or
//     https: URL (safeHref); otherwise only its text is kept;
//   - images become their alt text (no request is ever made for them);
//   - nesting depth and scanning distances are bounded, so hostile input
//     cannot blow the stack or take quadratic time on long lines.
//
// Node types: root; blocks paragraph, heading{level}, codeblock{lang,text},
// list{ordered,start,tight} of item, blockquote, hr, table of row{header} of
// cell{align}; inline text{text}, strong, em, del, span, code{text}, br,
// link{href}, citation{number,href}.
//
// Supported: ATX and setext headings, paragraphs, hard breaks, **bold**,
// *italic*, ~~strike~~, `code`, fenced and indented code blocks, bullet and
// ordered lists (nested, tight or loose), blockquotes, horizontal rules, GFM
// tables, [links](url), <autolinks>, bare http(s) URLs, backslash escapes,
// and numbered citations [n](url) as {type: 'citation'} nodes.

const MAX_DEPTH = 16; // nesting of blocks (quotes, lists) and of inline spans
const MAX_LABEL = 2000; // how far a link label may run before "]"

// ---------------------------------------------------------------------------
// URLs

/**
 * safeHref returns the normalised URL when raw is an absolute http: or
 * https: URL, and null for anything else (javascript:, data:, vbscript:,
 * relative paths, garbage).
 */
export function safeHref(raw) {
  if (typeof raw !== 'string') return null;
  const s = raw.trim();
  if (!s || s.length > 4096) return null;
  let url;
  try {
    url = new URL(s); // no base: relative URLs throw
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  return url.href;
}

// ---------------------------------------------------------------------------
// Block structure

/** parse turns Markdown source into {type: 'root', children: [blocks]}. */
export function parse(src) {
  const text = String(src ?? '')
    .replace(/\r\n?/g, '\n')
    .replace(/\t/g, '    ')
    .replace(/\u0000/g, '\uFFFD');
  return { type: 'root', children: parseBlocks(text.split('\n'), 0) };
}

const RE_FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const RE_ATX = /^ {0,3}(#{1,6})(?:[ ]+(.*?))?[ ]*$/;
const RE_HR = /^ {0,3}([-*_])(?:[ ]*\1){2,}[ ]*$/;
const RE_QUOTE = /^ {0,3}> ?(.*)$/;
const RE_LIST = /^( {0,3})([-+*]|(\d{1,9})([.)]))(?:( +)(.*))?$/;
const RE_SETEXT1 = /^ {0,3}=+[ ]*$/;
const RE_SETEXT2 = /^ {0,3}-+[ ]*$/;
const RE_TABLE_DELIM = /^ {0,3}\|?[ ]*:?-+:?[ ]*(\|[ ]*:?-+:?[ ]*)*\|?[ ]*$/;

function isBlank(line) {
  return /^[ ]*$/.test(line);
}

function leadingSpaces(line) {
  return line.length - line.trimStart().length;
}

/** fence returns {indent, marker, lang} when line opens a code fence. */
function fence(line) {
  const m = RE_FENCE.exec(line);
  if (!m) return null;
  if (m[2][0] === '`' && m[3].includes('`')) return null; // ``` with a backtick in the info string is inline code
  return { indent: m[1].length, marker: m[2], lang: m[3].trim().split(/\s+/)[0] || '' };
}

function closesFence(line, marker) {
  const t = line.replace(/^ {0,3}/, '');
  let n = 0;
  while (t[n] === marker[0]) n++;
  return n >= marker.length && isBlank(t.slice(n));
}

/** listMarker parses a list item's first line, or returns null. */
function listMarker(line) {
  const m = RE_LIST.exec(line);
  if (!m) return null;
  const indent = m[1].length;
  const marker = m[2];
  const spaces = m[5] || '';
  const rest = m[6] ?? '';
  if (!spaces && rest) return null; // "-foo" is not an item
  // Content starts after the marker and its spaces (1–4); five or more
  // spaces mean indented code inside the item, so count only one.
  const pad = spaces.length >= 1 && spaces.length <= 4 && rest !== '' ? spaces.length : 1;
  return {
    indent,
    ordered: m[3] !== undefined,
    char: m[4] ?? marker, // "-", "+", "*", or the ordered delimiter "." / ")"
    start: m[3] !== undefined ? parseInt(m[3], 10) : 1,
    contentIndent: indent + marker.length + pad,
    rest: spaces.length > 4 ? ' '.repeat(spaces.length - 1) + rest : rest,
  };
}

function isTableStart(lines, i) {
  return lines[i].includes('|') && i + 1 < lines.length && lines[i + 1].includes('-') && RE_TABLE_DELIM.test(lines[i + 1]) &&
    splitRow(lines[i]).length === splitRow(lines[i + 1]).length;
}

/** startsBlock says whether line interrupts a paragraph. */
function startsBlock(line, lines, i) {
  if (fence(line) || RE_ATX.test(line) || RE_HR.test(line) || RE_QUOTE.test(line)) return true;
  const li = listMarker(line);
  // An empty item, or an ordered one not starting at 1, does not interrupt
  // a paragraph (so a wrapped "2024. was a year" stays text).
  if (li && li.rest.trim() !== '' && (!li.ordered || li.start === 1)) return true;
  return lines !== undefined && isTableStart(lines, i);
}

function parseBlocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i++;
      continue;
    }

    // Fenced code: everything up to the closing fence (or the end) is text.
    const f = fence(line);
    if (f) {
      const body = [];
      i++;
      while (i < lines.length && !closesFence(lines[i], f.marker)) {
        // Drop up to the fence's own indentation from each line.
        body.push(lines[i].replace(new RegExp(`^ {0,${f.indent}}`), ''));
        i++;
      }
      i++; // the closing fence
      out.push({ type: 'codeblock', lang: f.lang, text: body.join('\n') });
      continue;
    }

    // Indented code (four spaces), which cannot interrupt a paragraph.
    if (/^ {4}/.test(line)) {
      const body = [];
      while (i < lines.length && (/^ {4}/.test(lines[i]) || isBlank(lines[i]))) {
        body.push(lines[i].slice(4));
        i++;
      }
      while (body.length && isBlank(body[body.length - 1])) body.pop();
      out.push({ type: 'codeblock', lang: '', text: body.join('\n') });
      continue;
    }

    let m = RE_ATX.exec(line);
    if (m) {
      const text = (m[2] || '').replace(/(^|[ ]+)#+$/, '').trim();
      out.push({ type: 'heading', level: m[1].length, children: parseInline(text, depth) });
      i++;
      continue;
    }

    if (RE_HR.test(line)) {
      out.push({ type: 'hr' });
      i++;
      continue;
    }

    if (RE_QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && !isBlank(lines[i])) {
        const q = RE_QUOTE.exec(lines[i]);
        if (q) inner.push(q[1]);
        else if (!startsBlock(lines[i])) inner.push(lines[i]); // lazy continuation
        else break;
        i++;
      }
      out.push({ type: 'blockquote', children: depth < MAX_DEPTH ? parseBlocks(inner, depth + 1) : [paragraph(inner, depth)] });
      continue;
    }

    const li = listMarker(line);
    if (li) {
      const { node, next } = parseList(lines, i, li, depth);
      out.push(node);
      i = next;
      continue;
    }

    if (isTableStart(lines, i)) {
      const { node, next } = parseTable(lines, i, depth);
      out.push(node);
      i = next;
      continue;
    }

    // Paragraph, possibly turned into a setext heading by "===" or "---".
    const para = [line];
    i++;
    let heading = 0;
    while (i < lines.length && !isBlank(lines[i])) {
      if (RE_SETEXT1.test(lines[i])) { heading = 1; i++; break; }
      if (RE_SETEXT2.test(lines[i])) { heading = 2; i++; break; }
      if (startsBlock(lines[i], lines, i)) break;
      para.push(lines[i]);
      i++;
    }
    if (heading) out.push({ type: 'heading', level: heading, children: parseInline(para.map((l) => l.trim()).join('\n'), depth) });
    else out.push(paragraph(para, depth));
  }
  return out;
}

function paragraph(lines, depth) {
  // Leading spaces go; trailing ones stay until inline parsing (hard breaks).
  const text = lines.map((l) => l.replace(/^[ ]+/, '')).join('\n').replace(/[ ]+$/, '');
  return { type: 'paragraph', children: parseInline(text, depth) };
}

function parseList(lines, i, first, depth) {
  const list = { type: 'list', ordered: first.ordered, start: first.start, tight: true, children: [] };
  let blankBetweenItems = false;
  while (i < lines.length) {
    const mk = listMarker(lines[i]);
    if (!mk || mk.ordered !== first.ordered || mk.char !== first.char || mk.indent >= first.contentIndent) break;
    if (blankBetweenItems) list.tight = false;
    const body = [mk.rest];
    i++;
    let blank = false;
    while (i < lines.length) {
      const l = lines[i];
      if (isBlank(l)) {
        body.push('');
        blank = true;
        i++;
        continue;
      }
      if (leadingSpaces(l) >= mk.contentIndent) {
        body.push(l.slice(mk.contentIndent));
        blank = false;
        i++;
        continue;
      }
      if (blank) break; // an unindented line after a blank ends the item
      if (listMarker(l) || startsBlock(l, lines, i)) break;
      body.push(l.trimStart()); // lazy paragraph continuation
      i++;
    }
    while (body.length && isBlank(body[body.length - 1])) body.pop();
    blankBetweenItems = blank;
    // A blank line between two blocks of one item makes the list loose.
    if (body.some(isBlank) && !fence(body[0] || '')) list.tight = false;
    const children = depth < MAX_DEPTH ? parseBlocks(body, depth + 1) : [paragraph(body, depth)];
    list.children.push({ type: 'item', children });
  }
  return { node: list, next: i };
}

/** splitRow splits a table row on unescaped pipes outside code spans. */
function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cell = '';
  let inCode = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' && s[i + 1] === '|') {
      cell += '|';
      i++;
    } else if (c === '`') {
      inCode = !inCode;
      cell += c;
    } else if (c === '|' && !inCode) {
      cells.push(cell.trim());
      cell = '';
    } else cell += c;
  }
  cells.push(cell.trim());
  return cells;
}

function parseTable(lines, i, depth) {
  const header = splitRow(lines[i]);
  const align = splitRow(lines[i + 1]).map((d) => {
    const l = d.startsWith(':');
    const r = d.endsWith(':');
    return l && r ? 'center' : r ? 'right' : l ? 'left' : '';
  });
  const cell = (text, k) => ({ type: 'cell', align: align[k] || '', children: parseInline(text, depth) });
  const node = { type: 'table', children: [{ type: 'row', header: true, children: header.map(cell) }] };
  i += 2;
  while (i < lines.length && !isBlank(lines[i]) && lines[i].includes('|')) {
    const cells = splitRow(lines[i]).slice(0, header.length);
    while (cells.length < header.length) cells.push('');
    node.children.push({ type: 'row', header: false, children: cells.map(cell) });
    i++;
  }
  return { node, next: i };
}

// ---------------------------------------------------------------------------
// Inline content

const RE_PUNCT = /[!-/:-@[-`{-~]/;
const RE_AUTOLINK = /<([a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^\s<>]*)>/y;
const RE_BARE_URL = /https?:\/\/[^\s<>"'`]+/iy;
const RE_WORD = /[\p{L}\p{N}]/u;

/** parseInline turns a paragraph's text into inline nodes. */
export function parseInline(s, depth = 0) {
  const out = [];
  let buf = '';
  const flush = () => {
    if (buf) pushText(out, buf);
    buf = '';
  };
  const memo = new Map(); // emphasis closers known to be missing
  let i = 0;
  while (i < s.length) {
    const c = s[i];

    if (c === '\\') {
      const n = s[i + 1];
      if (n === '\n') {
        flush();
        out.push({ type: 'br' });
        i += 2;
      } else if (n !== undefined && RE_PUNCT.test(n)) {
        buf += n;
        i += 2;
      } else {
        buf += c;
        i++;
      }
      continue;
    }

    if (c === '\n') {
      // Two trailing spaces make a hard break; otherwise a soft one.
      if (/ {2,}$/.test(buf)) {
        buf = buf.replace(/ +$/, '');
        flush();
        out.push({ type: 'br' });
      } else buf = buf.replace(/ +$/, '') + '\n';
      i++;
      continue;
    }

    if (c === '`') {
      const run = runLength(s, i, '`');
      const close = findBackticks(s, i + run, run);
      if (close >= 0) {
        flush();
        let code = s.slice(i + run, close).replace(/\n/g, ' ');
        if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim()) code = code.slice(1, -1);
        out.push({ type: 'code', text: code });
        i = close + run;
      } else {
        buf += s.slice(i, i + run);
        i += run;
      }
      continue;
    }

    if (c === '!' && s[i + 1] === '[') {
      const link = scanLink(s, i + 1);
      if (link) {
        // An image shows as its alt text only: no request, no element.
        buf += plainText(parseInline(link.label, depth + 1));
        i = link.end;
        continue;
      }
    }

    if (c === '[') {
      const link = scanLink(s, i);
      if (link) {
        flush();
        for (const node of linkNodes(link, depth)) {
          if (node.type === 'text') pushText(out, node.text);
          else out.push(node);
        }
        i = link.end;
        continue;
      }
    }

    if (c === '<') {
      RE_AUTOLINK.lastIndex = i;
      const m = RE_AUTOLINK.exec(s);
      if (m) {
        const href = safeHref(m[1]);
        if (href) {
          flush();
          out.push({ type: 'link', href, children: [{ type: 'text', text: m[1] }] });
        } else buf += m[0]; // e.g. <javascript:…> stays literal text
        i += m[0].length;
        continue;
      }
    }

    if ((c === 'h' || c === 'H') && (i === 0 || !RE_WORD.test(s[i - 1]))) {
      RE_BARE_URL.lastIndex = i;
      const m = RE_BARE_URL.exec(s);
      if (m) {
        const url = trimBareURL(m[0]);
        const href = safeHref(url);
        if (href && url.length > 'https://'.length) {
          flush();
          out.push({ type: 'link', href, children: [{ type: 'text', text: url }] });
          i += url.length;
          continue;
        }
      }
    }

    if (c === '*' || c === '_' || c === '~') {
      const r = depth < MAX_DEPTH ? emphasis(s, i, depth, memo) : null;
      const run = runLength(s, i, c);
      if (r) {
        flush();
        out.push(r.node);
        i = r.end;
      } else {
        buf += s.slice(i, i + run);
        i += run;
      }
      continue;
    }

    buf += c;
    i++;
  }
  flush();
  return out;
}

function pushText(out, text) {
  const last = out[out.length - 1];
  if (last && last.type === 'text') last.text += text;
  else out.push({ type: 'text', text });
}

function runLength(s, i, ch) {
  let n = 0;
  while (s[i + n] === ch) n++;
  return n;
}

/** findBackticks finds a run of exactly n backticks from i, or -1. */
function findBackticks(s, i, n) {
  while (i < s.length) {
    const j = s.indexOf('`', i);
    if (j < 0) return -1;
    const run = runLength(s, j, '`');
    if (run === n) return j;
    i = j + run;
  }
  return -1;
}

/**
 * emphasis parses *em*, **strong**, ***both***, _em_, __strong__ and
 * ~~del~~ opening at i: it looks for a closing run of the same character
 * and length, skipping code spans and escapes.
 */
function emphasis(s, i, depth, memo) {
  const ch = s[i];
  const n = runLength(s, i, ch);
  if (n > 3 || (ch === '~' && n !== 2)) return null;
  const after = s[i + n];
  if (after === undefined || /\s/.test(after)) return null; // not left-flanking
  if (ch === '_' && i > 0 && RE_WORD.test(s[i - 1])) return null; // snake_case
  const key = ch + n;
  if (memo.has(key) && memo.get(key) <= i) return null;

  let j = i + n;
  while (j < s.length) {
    const c = s[j];
    if (c === '\\') {
      j += 2;
      continue;
    }
    if (c === '`') {
      const run = runLength(s, j, '`');
      const close = findBackticks(s, j + run, run);
      j = close >= 0 ? close + run : j + run;
      continue;
    }
    if (c === ch) {
      const run = runLength(s, j, ch);
      const before = s[j - 1];
      const next = s[j + run];
      const closes = run === n && !/\s/.test(before) && !(ch === '_' && next !== undefined && RE_WORD.test(next));
      if (closes) {
        const children = parseInline(s.slice(i + n, j), depth + 1);
        let node;
        if (ch === '~') node = { type: 'del', children };
        else if (n === 1) node = { type: 'em', children };
        else if (n === 2) node = { type: 'strong', children };
        else node = { type: 'strong', children: [{ type: 'em', children }] };
        return { node, end: j + run };
      }
      j += run;
      continue;
    }
    j++;
  }
  memo.set(key, i); // no closer from here on: later openers need not look again
  return null;
}

/**
 * scanLink parses "[label](destination "title")" starting at the "[" at i.
 * It returns {label, dest, end} or null.
 */
function scanLink(s, i) {
  let depth = 0;
  let j = i;
  const limit = Math.min(s.length, i + MAX_LABEL);
  for (; j < limit; j++) {
    const c = s[j];
    if (c === '\\') j++;
    else if (c === '`') {
      const run = runLength(s, j, '`');
      const close = findBackticks(s, j + run, run);
      if (close >= 0 && close < limit) j = close + run - 1;
      else j += run - 1;
    } else if (c === '[') depth++;
    else if (c === ']') {
      depth--;
      if (depth === 0) break;
    }
  }
  if (j >= limit || s[j] !== ']' || s[j + 1] !== '(') return null;
  const label = s.slice(i + 1, j);
  let k = j + 2;
  while (s[k] === ' ' || s[k] === '\n') k++;
  let dest = '';
  if (s[k] === '<') {
    const close = s.indexOf('>', k);
    if (close < 0 || s.slice(k, close).includes('\n')) return null;
    dest = s.slice(k + 1, close);
    k = close + 1;
  } else {
    let parens = 0;
    const start = k;
    for (; k < s.length; k++) {
      const c = s[k];
      if (c === '\\' && RE_PUNCT.test(s[k + 1] || '')) k++;
      else if (c === '(') parens++;
      else if (c === ')') {
        if (parens === 0) break;
        parens--;
      } else if (/\s/.test(c)) break;
    }
    dest = s.slice(start, k).replace(/\\([!-/:-@[-`{-~])/g, '$1');
  }
  while (s[k] === ' ' || s[k] === '\n') k++;
  // Optional title: "…", '…' or (…). It is dropped: links get no title.
  const q = s[k];
  if (q === '"' || q === "'" || q === '(') {
    const closeQ = q === '(' ? ')' : q;
    const close = s.indexOf(closeQ, k + 1);
    if (close < 0) return null;
    k = close + 1;
    while (s[k] === ' ' || s[k] === '\n') k++;
  }
  if (s[k] !== ')') return null;
  return { label, dest, end: k + 1 };
}

/** linkNodes turns a scanned link into nodes: a citation, a link or text. */
function linkNodes(link, depth) {
  const href = safeHref(link.dest);
  const num = /^\s*(\d{1,4})\s*$/.exec(link.label);
  if (num) {
    const number = parseInt(num[1], 10);
    // A citation whose URL is not http(s) shows as the plain text "[n]".
    return href ? [{ type: 'citation', number, href }] : [{ type: 'text', text: `[${number}]` }];
  }
  const children = depth < MAX_DEPTH ? parseInline(link.label, depth + 1) : [{ type: 'text', text: link.label }];
  if (!href) return children; // the text alone
  // Links cannot nest: a link inside the label keeps only its text.
  return [{ type: 'link', href, children: children.map(unlink) }];
}

function unlink(node) {
  if (node.type === 'link') return { type: 'span', children: node.children.map(unlink) };
  if (node.type === 'citation') return { type: 'text', text: `[${node.number}]` };
  if (node.children) return { ...node, children: node.children.map(unlink) };
  return node;
}

/** trimBareURL drops trailing punctuation and unbalanced ")" from a URL. */
function trimBareURL(url) {
  for (;;) {
    const last = url[url.length - 1];
    if ('.,:;!?*_~\'"'.includes(last)) url = url.slice(0, -1);
    else if (last === ')' && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length) url = url.slice(0, -1);
    else return url;
  }
}

/** plainText flattens inline nodes to their text. */
export function plainText(nodes) {
  let s = '';
  for (const n of nodes) {
    if (n.type === 'text' || n.type === 'code') s += n.text;
    else if (n.type === 'br') s += '\n';
    else if (n.type === 'citation') s += `[${n.number}]`;
    else if (n.children) s += plainText(n.children);
  }
  return s;
}

/** walk calls fn on every node of a tree (for tests and checks). */
export function walk(node, fn) {
  fn(node);
  for (const child of node.children || []) walk(child, fn);
}

// ---------------------------------------------------------------------------
// DOM builder

/**
 * renderMarkdown builds the DOM of a parsed tree (or of a Markdown string)
 * into a DocumentFragment.
 *   opts.headingOffset  added to heading levels (answers sit under the page's
 *                       own h2/h3), capped at h6;
 *   opts.sources        [{number, title, url, label}] to title citations.
 */
export function renderMarkdown(treeOrSource, doc = document, opts = {}) {
  const tree = typeof treeOrSource === 'string' ? parse(treeOrSource) : treeOrSource;
  const frag = doc.createDocumentFragment();
  const sources = new Map((opts.sources || []).map((s) => [Number(s.number), s]));
  const ctx = { doc, offset: opts.headingOffset || 0, sources, tight: false };
  for (const child of tree.children || []) build(child, frag, ctx);
  return frag;
}

const ALIGN_CLASS = { left: 'align-left', right: 'align-right', center: 'align-center' };

function build(node, parent, ctx) {
  const { doc } = ctx;
  const make = (tag, cls) => {
    const e = doc.createElement(tag);
    if (cls) e.className = cls;
    parent.appendChild(e);
    return e;
  };
  const kids = (into, c = ctx) => {
    for (const child of node.children || []) build(child, into, c);
  };
  switch (node.type) {
    case 'text':
      parent.appendChild(doc.createTextNode(node.text));
      return;
    case 'paragraph':
      // Items of a tight list hold their text directly, without <p>.
      if (ctx.tight) kids(parent, { ...ctx, tight: false });
      else kids(make('p'));
      return;
    case 'heading':
      kids(make(`h${Math.min(6, Math.max(1, (node.level | 0) + ctx.offset))}`));
      return;
    case 'code':
      make('code').textContent = node.text;
      return;
    case 'codeblock': {
      const pre = make('pre', 'md-code');
      const code = pre.appendChild(doc.createElement('code'));
      const lang = String(node.lang || '').toLowerCase().replace(/[^a-z0-9_+-]/g, '');
      if (lang) {
        code.className = `language-${lang}`;
        pre.dataset.lang = lang;
      }
      code.textContent = node.text;
      return;
    }
    case 'list': {
      const list = make(node.ordered ? 'ol' : 'ul');
      if (node.ordered && node.start !== 1) list.start = node.start;
      for (const item of node.children) {
        const li = list.appendChild(doc.createElement('li'));
        for (const child of item.children) build(child, li, { ...ctx, tight: node.tight });
      }
      return;
    }
    case 'blockquote':
      kids(make('blockquote'), { ...ctx, tight: false });
      return;
    case 'hr':
      make('hr');
      return;
    case 'table': {
      const wrap = make('div', 'md-table');
      const table = wrap.appendChild(doc.createElement('table'));
      const [head, ...rows] = node.children;
      const section = (tag, list) => {
        const sec = table.appendChild(doc.createElement(tag));
        for (const row of list) {
          const tr = sec.appendChild(doc.createElement('tr'));
          for (const cell of row.children) {
            const td = tr.appendChild(doc.createElement(row.header ? 'th' : 'td'));
            if (ALIGN_CLASS[cell.align]) td.className = ALIGN_CLASS[cell.align];
            for (const child of cell.children) build(child, td, ctx);
          }
        }
      };
      section('thead', [head]);
      if (rows.length) section('tbody', rows);
      return;
    }
    case 'strong':
    case 'em':
    case 'del':
    case 'span':
      kids(make(node.type));
      return;
    case 'br':
      make('br');
      return;
    case 'link': {
      const href = safeHref(node.href); // checked again: the tree may come from elsewhere
      if (!href) {
        kids(parent);
        return;
      }
      const a = make('a');
      a.href = href;
      a.rel = 'noopener noreferrer nofollow';
      a.target = '_blank';
      kids(a);
      return;
    }
    case 'citation': {
      const href = safeHref(node.href);
      const label = `[${node.number}]`;
      if (!href) {
        parent.appendChild(doc.createTextNode(label));
        return;
      }
      const sup = make('sup', 'citation-sup');
      const a = sup.appendChild(doc.createElement('a'));
      a.className = 'citation';
      a.href = href;
      a.rel = 'noopener noreferrer nofollow';
      a.target = '_blank';
      a.textContent = String(node.number);
      a.dataset.source = String(node.number);
      const src = ctx.sources.get(node.number);
      const name = src ? src.title || src.label || hostOf(href) : hostOf(href);
      a.title = `Source ${node.number}: ${name}`;
      a.setAttribute('aria-label', `Source ${node.number}: ${name}`);
      return;
    }
    default:
      // Unknown node: keep its text so nothing silently disappears.
      if (node.children) kids(parent);
      else if (node.text) parent.appendChild(doc.createTextNode(node.text));
  }
}

/** hostOf returns the host name of a URL without "www.", or "". */
export function hostOf(url) {
  try {
    return new URL(url).hostname.replace(/^www\./, '');
  } catch {
    return '';
  }
}
