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
//   - nesting depth is bounded and every look-ahead is answered from tables
//     built once per paragraph (bracket partners, parenthesis depth, next
//     occurrences), so hostile input can neither blow the stack nor take
//     quadratic time: parse's work is linear in the input, which parseWork
//     counts and the tests check.
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

// work counts the characters the scanners look at; parseWork reports it.
let work = 0;

/**
 * parseWork parses src like parse and returns the tree with the work done:
 * the number of characters the scanners looked at, which is linear in the
 * size of src (the tests check its growth, not a time).
 */
export function parseWork(src) {
  work = 0;
  const tree = parse(src);
  return { tree, work };
}

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
// A bare URL ends at white space, quotes, angle and square brackets and
// backslashes, none of which a URL holds unencoded in prose.
const RE_BARE_URL = /https?:\/\/[^\s<>"'`[\]\\]+/iy;
const RE_WORD = /[\p{L}\p{N}]/u;

/** parseInline turns a paragraph's text into inline nodes. */
export function parseInline(s, depth = 0) {
  return inline(new Scan(s), 0, s.length, depth);
}

/**
 * Scan holds a paragraph's text and the tables that answer look-ahead
 * questions in O(1). Each table is built once, in one pass over the text,
 * when it is first needed; nested spans (emphasis, link labels) are parsed
 * as ranges of the same Scan, so they share its tables.
 */
class Scan {
  constructor(s) {
    this.s = s;
    this.tables = new Map();
    this.misses = new Map(); // emphasis and code-span closers known to be missing
  }

  /** next returns the first j >= i with s[j] === ch, or -1. */
  next(ch, i) {
    let t = this.tables.get(ch);
    if (!t) {
      const s = this.s;
      t = new Int32Array(s.length + 1);
      t[s.length] = -1;
      for (let k = s.length - 1; k >= 0; k--) t[k] = s[k] === ch ? k : t[k + 1];
      work += s.length;
      this.tables.set(ch, t);
    }
    return i >= this.s.length ? -1 : t[i];
  }

  /** nextSpace returns the first j >= i where s[j] is white space, or s.length. */
  nextSpace(i) {
    let t = this.tables.get(' ');
    if (!t) {
      const s = this.s;
      t = new Int32Array(s.length + 1);
      t[s.length] = s.length;
      for (let k = s.length - 1; k >= 0; k--) t[k] = RE_SPACE.test(s[k]) ? k : t[k + 1];
      work += s.length;
      this.tables.set(' ', t);
    }
    return i >= this.s.length ? this.s.length : t[i];
  }

  /**
   * closeParen returns the first unescaped ")" at or after i that no
   * unescaped "(" after i balances — where a link destination starting at
   * i ends — or -1. With depth[k] the parenthesis depth before s[k], it is
   * just before the first m > i with depth[m] < depth[i]: a "next smaller
   * element" table, built with one stack pass.
   */
  closeParen(i) {
    if (!this.drop) {
      const s = this.s;
      const n = s.length;
      const depth = new Int32Array(n + 1);
      for (let k = 0; k < n; k++) {
        const c = s[k];
        depth[k + 1] = depth[k] + (c === '(' ? 1 : c === ')' ? -1 : 0);
        if (c === '\\' && k + 1 < n && RE_PUNCT.test(s[k + 1])) {
          depth[k + 2] = depth[k];
          depth[k + 1] = depth[k];
          k++;
        }
      }
      const drop = new Int32Array(n + 1).fill(-1);
      const stack = [];
      for (let m = 0; m <= n; m++) {
        while (stack.length && depth[stack[stack.length - 1]] > depth[m]) drop[stack.pop()] = m - 1;
        stack.push(m);
      }
      work += 2 * n;
      this.drop = drop;
    }
    return i > this.s.length ? -1 : this.drop[i];
  }

  /** close returns the "]" that closes the "[" at i, or -1; code spans and escapes are skipped. */
  close(i) {
    if (!this.brackets) {
      const s = this.s;
      const to = new Int32Array(s.length).fill(-1);
      const open = [];
      for (let k = 0; k < s.length; k++) {
        const c = s[k];
        if (c === '\\') k++;
        else if (c === '`') {
          const run = runLength(s, k, '`');
          const end = codeSpanEnd(this, k + run, run, s.length);
          k = end >= 0 ? end + run - 1 : k + run - 1;
        } else if (c === '[') open.push(k);
        else if (c === ']' && open.length) to[open.pop()] = k;
      }
      work += s.length;
      this.brackets = to;
    }
    return this.brackets[i];
  }
}

const RE_SPACE = /\s/;

/**
 * codeSpanEnd finds the run of exactly n backticks that closes a code span
 * opened before i, before to, or returns -1. A miss is remembered: a later
 * opener of the same length in the same range has no closer either.
 */
function codeSpanEnd(sc, i, n, to) {
  const key = `\`${n}:${to}`;
  const miss = sc.misses.get(key);
  if (miss !== undefined && miss <= i) return -1;
  const s = sc.s;
  const start = i;
  while (i < to) {
    const j = sc.next('`', i);
    if (j < 0 || j >= to) break;
    const run = runLength(s, j, '`');
    work += run + 1;
    if (run === n) return j;
    i = j + run;
  }
  sc.misses.set(key, start);
  return -1;
}

/** inline parses s[from:to] of a Scan into inline nodes. */
function inline(sc, from, to, depth) {
  const s = sc.s;
  const out = [];
  let buf = '';
  const flush = () => {
    if (buf) pushText(out, buf);
    buf = '';
  };
  let i = from;
  while (i < to) {
    work++;
    const c = s[i];

    if (c === '\\') {
      const n = i + 1 < to ? s[i + 1] : undefined;
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
      const close = codeSpanEnd(sc, i + run, run, to);
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

    if (c === '!' && s[i + 1] === '[' && i + 1 < to) {
      const link = scanLink(sc, i + 1, to);
      if (link) {
        // An image shows as its alt text only: no request, no element.
        buf += plainText(inline(sc, link.labelFrom, link.labelTo, depth + 1));
        i = link.end;
        continue;
      }
    }

    if (c === '[') {
      const link = scanLink(sc, i, to);
      if (link) {
        flush();
        for (const node of linkNodes(sc, link, depth)) {
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
      if (m && i + m[0].length <= to) {
        work += m[0].length;
        const href = safeHref(m[1]);
        if (href) {
          flush();
          out.push({ type: 'link', href, children: [{ type: 'text', text: m[1] }] });
        } else buf += m[0]; // e.g. <javascript:…> stays literal text
        i += m[0].length;
        continue;
      }
    }

    if ((c === 'h' || c === 'H') && (i === from || !RE_WORD.test(s[i - 1]))) {
      RE_BARE_URL.lastIndex = i;
      const m = RE_BARE_URL.exec(s);
      if (m) {
        const whole = m[0].slice(0, to - i);
        work += whole.length;
        const url = trimBareURL(whole);
        const href = safeHref(url);
        if (href && url.length > 'https://'.length) {
          flush();
          out.push({ type: 'link', href, children: [{ type: 'text', text: url }] });
          i += url.length;
        } else {
          // Not a link: the whole run is text, so that it is not scanned
          // again from each "http" inside it.
          buf += whole;
          i += whole.length;
        }
        continue;
      }
    }

    if (c === '*' || c === '_' || c === '~') {
      const r = depth < MAX_DEPTH ? emphasis(sc, i, to, depth) : null;
      const run = runLength(s, i, c);
      if (r) {
        flush();
        out.push(r.node);
        i = r.end;
      } else {
        buf += s.slice(i, Math.min(to, i + run));
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
  work += n;
  return n;
}

/**
 * emphasis parses *em*, **strong**, ***both***, _em_, __strong__ and
 * ~~del~~ opening at i: it looks for a closing run of the same character
 * and length before to, skipping code spans and escapes. A run found to
 * have no closer is remembered, so later openers like it do not look again.
 */
function emphasis(sc, i, to, depth) {
  const s = sc.s;
  const ch = s[i];
  const n = runLength(s, i, ch);
  if (n > 3 || (ch === '~' && n !== 2)) return null;
  const after = s[i + n];
  if (i + n >= to || /\s/.test(after)) return null; // not left-flanking
  if (ch === '_' && i > 0 && RE_WORD.test(s[i - 1])) return null; // snake_case
  const key = `${ch}${n}:${to}`;
  const miss = sc.misses.get(key);
  if (miss !== undefined && miss <= i) return null;

  let j = i + n;
  while (j < to) {
    work++;
    const c = s[j];
    if (c === '\\') {
      j += 2;
      continue;
    }
    if (c === '`') {
      const run = runLength(s, j, '`');
      const close = codeSpanEnd(sc, j + run, run, to);
      j = close >= 0 ? close + run : j + run;
      continue;
    }
    // A link or an autolink binds tighter than emphasis: a "_" in its URL
    // closes nothing (else "_[1](…/Go_(x))" would link to ".../Go").
    if (c === '[') {
      const link = scanLink(sc, j, to);
      j = link ? link.end : j + 1;
      continue;
    }
    if (c === '<') {
      RE_AUTOLINK.lastIndex = j;
      const m = RE_AUTOLINK.exec(s);
      j += m && j + m[0].length <= to ? m[0].length : 1;
      continue;
    }
    if (c === ch) {
      const run = Math.min(runLength(s, j, ch), to - j);
      const before = s[j - 1];
      const next = j + run < to ? s[j + run] : undefined;
      const closes = run === n && !/\s/.test(before) && !(ch === '_' && next !== undefined && RE_WORD.test(next));
      if (closes) {
        const children = inline(sc, i + n, j, depth + 1);
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
    // Jump to the next character that matters.
    const k = Math.min(...[ch, '\\', '`', '[', '<'].map((x) => {
      const p = sc.next(x, j);
      return p < 0 ? to : p;
    }));
    j = Math.max(j + 1, Math.min(k, to));
  }
  sc.misses.set(key, i);
  return null;
}

/**
 * scanLink parses "[label](destination "title")" starting at the "[" at i,
 * ending before to. It returns {labelFrom, labelTo, dest, end} or null.
 * Every look-ahead is a table lookup (Scan), so a paragraph full of
 * unclosed links costs linear time.
 */
function scanLink(sc, i, to) {
  const s = sc.s;
  const j = sc.close(i);
  if (j < 0 || j >= to || j - i > MAX_LABEL || s[j + 1] !== '(') return null;
  let k = j + 2;
  while (k < to && (s[k] === ' ' || s[k] === '\n')) k++;
  let destFrom;
  let destTo;
  if (s[k] === '<') {
    const close = sc.next('>', k);
    const nl = sc.next('\n', k);
    if (close < 0 || close >= to || (nl >= 0 && nl < close)) return null;
    destFrom = k + 1;
    destTo = close;
    k = close + 1;
  } else {
    const space = sc.nextSpace(k);
    const paren = sc.closeParen(k);
    destFrom = k;
    destTo = Math.min(to, space, paren < 0 ? to : paren);
    k = destTo;
  }
  while (k < to && (s[k] === ' ' || s[k] === '\n')) k++;
  // Optional title: "…", '…' or (…). It is dropped: links get no title.
  const q = s[k];
  if (k < to && (q === '"' || q === "'" || q === '(')) {
    const close = sc.next(q === '(' ? ')' : q, k + 1);
    if (close < 0 || close >= to) return null;
    k = close + 1;
    while (k < to && (s[k] === ' ' || s[k] === '\n')) k++;
  }
  if (k >= to || s[k] !== ')') return null;
  // Only a link is read in full: its text is consumed, so the work is
  // linear.
  work += destTo - destFrom;
  let dest = s.slice(destFrom, destTo);
  if (s[destFrom - 1] !== '<') dest = dest.replace(/\\([!-/:-@[-`{-~])/g, '$1');
  return { labelFrom: i + 1, labelTo: j, dest, end: k + 1 };
}

/** linkNodes turns a scanned link into nodes: a citation, a link or text. */
function linkNodes(sc, link, depth) {
  const href = safeHref(link.dest);
  const label = sc.s.slice(link.labelFrom, link.labelTo);
  const num = /^\s*(\d{1,4})\s*$/.exec(label);
  if (num) {
    const number = parseInt(num[1], 10);
    // A citation whose URL is not http(s) shows as the plain text "[n]".
    return href ? [{ type: 'citation', number, href }] : [{ type: 'text', text: `[${number}]` }];
  }
  const children = depth < MAX_DEPTH ? inline(sc, link.labelFrom, link.labelTo, depth + 1) : [{ type: 'text', text: label }];
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

/**
 * trimBareURL drops trailing punctuation and unbalanced ")" from a URL,
 * counting the parentheses once (counting them again for every ")" made
 * a URL of nested parentheses quadratic).
 */
function trimBareURL(url) {
  let open = 0;
  let closed = 0;
  for (const c of url) {
    if (c === '(') open++;
    else if (c === ')') closed++;
  }
  let end = url.length;
  for (;;) {
    const last = url[end - 1];
    if (end > 0 && '.,:;!?*_~\'"'.includes(last)) end--;
    else if (last === ')' && open < closed) {
      closed--;
      end--;
    } else return url.slice(0, end);
  }
}

// A Sources list at the end of an answer: a heading (any level, or a bold
// or plain "Sources:" line) followed only by lines that name sources.
const RE_SOURCES_HEADING = /^ {0,3}(?:#{1,6}[ \t]+)?[*_]{0,3}(?:sources|references|citations|bibliography|works cited)[ \t]*:?[ \t]*[*_]{0,3}[ \t]*:?[ \t]*#*[ \t]*$/i;
const RE_SOURCE_ITEM = /\]\(|:\/\/|www\./i;

/**
 * withoutSourcesList returns markdown without the list of sources that
 * ends it, if it ends with one: the page shows the report's sources in a
 * section of their own, so the list an agent's answer carries (or one a
 * model wrote) would show them twice. Anything else is returned as it is.
 */
export function withoutSourcesList(markdown) {
  const lines = String(markdown ?? '').split('\n');
  let items = 0;
  for (let i = lines.length - 1; i > 0; i--) {
    const line = lines[i];
    if (!line.trim()) continue;
    if (line.length < 200 && RE_SOURCES_HEADING.test(line)) {
      if (!items) return markdown;
      let body = lines.slice(0, i).join('\n').replace(/\s+$/, '');
      body = body.replace(/\n {0,3}([-*_])(?:[ ]*\1){2,}[ ]*$/, '').replace(/\s+$/, '');
      return body.trim() ? body + '\n' : markdown;
    }
    if (!RE_SOURCE_ITEM.test(line)) return markdown;
    items++;
  }
  return markdown;
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
