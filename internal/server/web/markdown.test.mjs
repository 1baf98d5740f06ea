// Self-check of markdown.js (parser and DOM builder) and of sse.js's
// parser. Run: node internal/server/web/markdown.test.mjs
//
// The DOM builder runs against a tiny fake document that records what is
// created, so the test also proves that hostile input produces no element
// other than the expected ones and no href other than http(s).

import test from 'node:test';
import assert from 'node:assert/strict';
import { parse, parseWork, safeHref, walk, plainText, renderMarkdown, withoutSourcesList } from './markdown.js';
import { SSEParser, backoff } from './sse.js';
import { PATHOLOGICAL } from './markdown.cases.mjs';
import { compact, seconds } from './format.js';

// ---------------------------------------------------------------------------
// helpers

/** strip removes empty fields so trees compare simply. */
function blocks(src) {
  return parse(src).children;
}

function allNodes(tree) {
  const out = [];
  walk(tree, (n) => out.push(n));
  return out;
}

function assertOnlyWebHrefs(tree) {
  for (const n of allNodes(tree)) {
    if ('href' in n) assert.match(n.href, /^https?:\/\//, `node ${n.type} has href ${n.href}`);
  }
}

// A fake DOM: enough for renderMarkdown.
class FakeNode {
  constructor(nodeName) {
    this.nodeName = nodeName;
    this.childNodes = [];
    this.attributes = {};
    this.dataset = {};
    this.className = '';
  }
  appendChild(child) {
    this.childNodes.push(child);
    return child;
  }
  setAttribute(k, v) {
    this.attributes[k] = String(v);
  }
  set textContent(v) {
    this.childNodes = [new FakeText(String(v))];
  }
  get textContent() {
    return this.childNodes.map((c) => c.textContent).join('');
  }
  set innerHTML(_) {
    throw new Error('innerHTML must never be used');
  }
}
class FakeText {
  constructor(text) {
    this.nodeName = '#text';
    this.text = text;
  }
  get textContent() {
    return this.text;
  }
}
const fakeDoc = {
  createElement: (tag) => new FakeNode(tag.toUpperCase()),
  createTextNode: (t) => new FakeText(t),
  createDocumentFragment: () => new FakeNode('#fragment'),
};

function elements(node, out = []) {
  if (node instanceof FakeNode) {
    out.push(node);
    node.childNodes.forEach((c) => elements(c, out));
  }
  return out;
}

const ALLOWED_TAGS = new Set(['#fragment', 'P', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'STRONG', 'EM', 'DEL', 'SPAN', 'CODE', 'PRE', 'UL', 'OL', 'LI', 'BLOCKQUOTE', 'HR', 'BR', 'A', 'SUP', 'DIV', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD']);

function render(src, opts) {
  const frag = renderMarkdown(parse(src), fakeDoc, opts);
  const els = elements(frag);
  for (const e of els) {
    assert.ok(ALLOWED_TAGS.has(e.nodeName), `unexpected element ${e.nodeName}`);
    assert.deepEqual(Object.keys(e.attributes).filter((k) => /^on|^style$|^src/i.test(k)), [], 'no handler/style/src attribute');
    if (e.nodeName === 'A') assert.match(e.href, /^https?:\/\//, `a.href ${e.href}`);
    else assert.equal(e.href, undefined);
  }
  return { frag, els };
}

// ---------------------------------------------------------------------------
// safeHref

test('safeHref keeps http and https only', () => {
  assert.equal(safeHref('https://example.com/a?b=1#c'), 'https://example.com/a?b=1#c');
  assert.equal(safeHref('http://example.com'), 'http://example.com/');
  assert.equal(safeHref('  HTTPS://Example.com/x  '), 'https://example.com/x');
  for (const bad of [
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    ' javascript:alert(1)',
    'java\tscript:alert(1)',
    'java\nscript:alert(1)',
    '\u0001javascript:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'vbscript:msgbox(1)',
    'file:///etc/passwd',
    '//evil.example/x',
    '/relative/path',
    'relative',
    '&#106;avascript:alert(1)',
    '',
    null,
    undefined,
    42,
  ]) {
    assert.equal(safeHref(bad), null, `safeHref(${JSON.stringify(bad)})`);
  }
});

// ---------------------------------------------------------------------------
// normal Markdown

test('headings, paragraphs and inline styles', () => {
  const tree = parse('# Title\n\nSome **bold**, *italic*, _also_, ~~gone~~ and `a < b` code.\n\nSecond\nline  \nhard break');
  const [h, p1, p2] = tree.children;
  assert.deepEqual(h, { type: 'heading', level: 1, children: [{ type: 'text', text: 'Title' }] });
  assert.deepEqual(p1, {
    type: 'paragraph',
    children: [
      { type: 'text', text: 'Some ' },
      { type: 'strong', children: [{ type: 'text', text: 'bold' }] },
      { type: 'text', text: ', ' },
      { type: 'em', children: [{ type: 'text', text: 'italic' }] },
      { type: 'text', text: ', ' },
      { type: 'em', children: [{ type: 'text', text: 'also' }] },
      { type: 'text', text: ', ' },
      { type: 'del', children: [{ type: 'text', text: 'gone' }] },
      { type: 'text', text: ' and ' },
      { type: 'code', text: 'a < b' },
      { type: 'text', text: ' code.' },
    ],
  });
  assert.deepEqual(p2.children, [{ type: 'text', text: 'Second\nline' }, { type: 'br' }, { type: 'text', text: 'hard break' }]);
});

test('setext headings, nested emphasis, snake_case, escapes', () => {
  const [h1, h2, p] = blocks('Big\n===\n\nSmall\n---\n\n***both*** **a *b* c** snake_case_name \\*not\\*');
  assert.equal(h1.level, 1);
  assert.equal(h2.level, 2);
  assert.deepEqual(p.children[0], { type: 'strong', children: [{ type: 'em', children: [{ type: 'text', text: 'both' }] }] });
  assert.deepEqual(p.children[2], {
    type: 'strong',
    children: [{ type: 'text', text: 'a ' }, { type: 'em', children: [{ type: 'text', text: 'b' }] }, { type: 'text', text: ' c' }],
  });
  assert.equal(p.children[3].text, ' snake_case_name *not*');
});

test('code blocks keep their text verbatim', () => {
  const [fenced, indented] = blocks('```js\nconst a = "<b>**x**</b>";\n\n[l](javascript:x)\n```\n\n    four spaces\n    <i>x</i>');
  assert.deepEqual(fenced, { type: 'codeblock', lang: 'js', text: 'const a = "<b>**x**</b>";\n\n[l](javascript:x)' });
  assert.deepEqual(indented, { type: 'codeblock', lang: '', text: 'four spaces\n<i>x</i>' });
  // An unclosed fence runs to the end.
  assert.deepEqual(blocks('~~~\nopen'), [{ type: 'codeblock', lang: '', text: 'open' }]);
});

test('lists: bullets, ordered with start, nested, tight and loose', () => {
  const [ul, ol] = blocks('- one\n- two\n  - nested *a*\n  - nested b\n- three\n\n3. c\n4. d');
  assert.equal(ul.type, 'list');
  assert.equal(ul.ordered, false);
  assert.equal(ul.tight, true);
  assert.equal(ul.children.length, 3);
  const second = ul.children[1].children;
  assert.equal(second[0].type, 'paragraph');
  assert.equal(second[1].type, 'list');
  assert.equal(second[1].children.length, 2);
  assert.deepEqual(second[1].children[0].children[0].children[1], { type: 'em', children: [{ type: 'text', text: 'a' }] });
  assert.equal(ol.ordered, true);
  assert.equal(ol.start, 3);
  assert.equal(ol.children.length, 2);

  const [loose] = blocks('1. a\n\n2. b\n\n   more of b');
  assert.equal(loose.tight, false);
  assert.equal(loose.children.length, 2);
  assert.equal(loose.children[1].children.length, 2);

  // Lazy continuation lines belong to the item.
  const [lazy] = blocks('- first line\ncontinued');
  assert.equal(plainText(lazy.children[0].children[0].children), 'first line\ncontinued');
  // "2024. was" inside a paragraph is not a list.
  assert.equal(blocks('The year\n2024. was long').length, 1);
});

test('blockquotes, rules and tables', () => {
  const [bq, hr, table] = blocks('> quoted **text**\n> > nested\n\n---\n\n| a | b |\n|:--|--:|\n| 1 | `x|y` |\n| 2 |');
  assert.equal(bq.type, 'blockquote');
  assert.equal(bq.children[0].type, 'paragraph');
  assert.equal(bq.children[1].type, 'blockquote');
  assert.deepEqual(hr, { type: 'hr' });
  assert.equal(table.type, 'table');
  assert.equal(table.children.length, 3);
  assert.equal(table.children[0].header, true);
  assert.equal(table.children[0].children[0].align, 'left');
  assert.equal(table.children[0].children[1].align, 'right');
  assert.deepEqual(table.children[1].children[1].children, [{ type: 'code', text: 'x|y' }]);
  assert.deepEqual(table.children[2].children[1].children, []);
});

test('links, autolinks, bare URLs and parentheses in URLs', () => {
  const [p] = blocks('See [the *docs*](https://example.com/docs "Title"), <https://a.example/x>, https://b.example/y. and [wiki](https://en.wikipedia.org/wiki/Foo_(bar)).');
  const links = p.children.filter((n) => n.type === 'link');
  assert.equal(links.length, 4);
  assert.deepEqual(links[0], { type: 'link', href: 'https://example.com/docs', children: [{ type: 'text', text: 'the ' }, { type: 'em', children: [{ type: 'text', text: 'docs' }] }] });
  assert.equal(links[1].href, 'https://a.example/x');
  assert.equal(links[2].href, 'https://b.example/y'); // the final "." is not part of the URL
  assert.equal(links[3].href, 'https://en.wikipedia.org/wiki/Foo_(bar)');
});

test('numbered citations become citation nodes', () => {
  const [p] = blocks('Spain won [1](https://uefa.example/final) and Kane scored [2](https://bbc.example/k)[3](https://x.example/).');
  const cites = p.children.filter((n) => n.type === 'citation');
  assert.deepEqual(cites, [
    { type: 'citation', number: 1, href: 'https://uefa.example/final' },
    { type: 'citation', number: 2, href: 'https://bbc.example/k' },
    { type: 'citation', number: 3, href: 'https://x.example/' },
  ]);
  const { els } = render('Spain won [1](https://uefa.example/final).', { sources: [{ number: 1, title: 'UEFA final', url: 'https://uefa.example/final' }] });
  const a = els.find((e) => e.nodeName === 'A');
  assert.equal(a.className, 'citation');
  assert.equal(a.textContent, '1');
  assert.equal(a.title, 'Source 1: UEFA final');
  assert.equal(a.rel, 'noopener noreferrer nofollow');
  assert.equal(a.target, '_blank');
  assert.equal(els.find((e) => e.nodeName === 'SUP').className, 'citation-sup');
});

test('rendering builds the expected elements', () => {
  const { els } = render('## Head\n\n- a\n- **b**\n\n```\ncode\n```\n\n> q\n\n[x](https://ok.example/)', { headingOffset: 3 });
  const names = els.map((e) => e.nodeName);
  assert.ok(names.includes('H5')); // ## + 3
  assert.ok(names.includes('UL'));
  assert.ok(names.includes('PRE'));
  assert.ok(names.includes('BLOCKQUOTE'));
  const a = els.find((e) => e.nodeName === 'A');
  assert.equal(a.href, 'https://ok.example/');
  // Tight list items hold their text without <p>.
  const ul = els.find((e) => e.nodeName === 'UL');
  assert.equal(ul.childNodes[0].childNodes[0].nodeName, '#text');
});

test('an answer\'s own Sources list is left out (the page lists them once)', () => {
  const agent = 'Spain won [1](https://uefa.example/final).\n\n## Sources\n\n1. [UEFA](https://uefa.example/final)\n';
  assert.equal(withoutSourcesList(agent), 'Spain won [1](https://uefa.example/final).\n');
  const bold = 'Text.\n\n---\n\n**Sources:**\n- https://a.example/\n- [b](https://b.example/)\n';
  assert.equal(withoutSourcesList(bold), 'Text.\n');
  // Not a list of sources: kept whole.
  for (const keep of ['## Sources\n\nWe read the pages.\n', 'Only text.', 'Intro.\n\n## Sources\n', 'Intro.\n\n## Sources\n\n- one\n- https://a.example/\n']) {
    assert.equal(withoutSourcesList(keep), keep);
  }
});

// ---------------------------------------------------------------------------
// hostile input

const HOSTILE = [
  '<script>alert(1)</script>',
  '<img src=x onerror=alert(1)>',
  '[click](javascript:alert(1))',
  '[x](data:text/html,<script>alert(1)</script>)',
  '[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
  '[x]( JaVaScRiPt:alert(1) )',
  '[x](<javascript:alert(1)>)',
  '[x](vbscript:msgbox(1))',
  '[x](//evil.example/)',
  '[x](/local)',
  '[1](javascript:alert(1))',
  '![alt text](https://evil.example/pixel.png)',
  '![a](javascript:alert(1))',
  '<javascript:alert(1)>',
  '<a href="javascript:alert(1)">x</a>',
  '[x](java\\\nscript:alert(1))',
  '[a [nested](https://ok.example/) b](https://outer.example/)',
  '<svg/onload=alert(1)>',
  '```html\n<script>alert(1)</script>\n```',
  '"><script>alert(1)</script>',
];

test('hostile input never yields a non-http(s) href', () => {
  for (const src of HOSTILE) {
    const tree = parse(src);
    assertOnlyWebHrefs(tree);
    render(src); // asserts the tags, attributes and hrefs of the DOM
  }
});

test('raw HTML stays literal text', () => {
  assert.deepEqual(blocks('<script>alert(1)</script>'), [{ type: 'paragraph', children: [{ type: 'text', text: '<script>alert(1)</script>' }] }]);
  assert.deepEqual(blocks('<img src=x onerror=alert(1)>'), [{ type: 'paragraph', children: [{ type: 'text', text: '<img src=x onerror=alert(1)>' }] }]);
  const { frag } = render('<b>bold?</b> <img src=x onerror=alert(1)>');
  assert.equal(frag.textContent, '<b>bold?</b> <img src=x onerror=alert(1)>');
});

test('unsafe links keep only their text; images their alt', () => {
  assert.deepEqual(blocks('[click](javascript:alert(1))')[0].children, [{ type: 'text', text: 'click' }]);
  assert.deepEqual(blocks('[x](data:text/html,<script>alert(1)</script>)')[0].children, [{ type: 'text', text: 'x' }]);
  assert.deepEqual(blocks('[1](javascript:alert(1))')[0].children, [{ type: 'text', text: '[1]' }]);
  assert.deepEqual(blocks('![alt text](https://evil.example/pixel.png)')[0].children, [{ type: 'text', text: 'alt text' }]);
  assert.deepEqual(blocks('<javascript:alert(1)>')[0].children, [{ type: 'text', text: '<javascript:alert(1)>' }]);
  // A link inside a link label loses its own link.
  const [p] = blocks('[a [nested](https://ok.example/) b](https://outer.example/)');
  const links = allNodes(p).filter((n) => n.type === 'link');
  assert.equal(links.length, 1);
  assert.equal(links[0].href, 'https://outer.example/');
});

// Pathological inputs (markdown.cases.mjs): the work parse does
// (parseWork: the characters its scanners look at) must grow linearly — 10
// times the input, at most about 10 times the work — and stay within a
// constant per character. Counting work, not time, makes the check exact on
// a loaded machine; markdown.bench.mjs times the same inputs.
test('pathological input: work grows linearly', () => {
  for (const [name, make] of Object.entries(PATHOLOGICAL)) {
    const small = make(2000);
    const large = make(20000);
    const a = parseWork(small);
    const b = parseWork(large);
    assertOnlyWebHrefs(a.tree);
    assertOnlyWebHrefs(b.tree);
    const growth = b.work / Math.max(1, a.work);
    assert.ok(growth <= 13, `${name}: work grew ${growth.toFixed(1)}× for 10× the input (${a.work} → ${b.work})`);
    assert.ok(b.work <= 200 * large.length, `${name}: ${b.work} steps for ${large.length} characters`);
  }
});

// ---------------------------------------------------------------------------
// the event-stream parser and formatters

test('SSEParser: fields, comments, multi-line data, split chunks, CRLF', () => {
  const p = new SSEParser();
  let evs = p.feed(': ping\n\nid: 1\nevent: status\ndata: {"status":"running"}\n\nid: 2\nev');
  assert.deepEqual(evs, [{ id: '1', event: 'status', data: '{"status":"running"}' }]);
  evs = p.feed('ent: token\ndata: {"text":"a"}\r');
  assert.deepEqual(evs, []);
  evs = p.feed('\n\r\nid:3\ndata: line1\ndata: line2\n\n');
  assert.deepEqual(evs, [
    { id: '2', event: 'token', data: '{"text":"a"}' },
    { id: '3', event: 'message', data: 'line1\nline2' },
  ]);
  // An id without data updates the last id but dispatches nothing.
  assert.deepEqual(p.feed('id: 9\n\n'), []);
  assert.equal(p.lastId, '9');
  // end() drops an event cut off by the end of the stream.
  assert.deepEqual(p.feed('id: 10\nevent: token\ndata: {"text":"cut'), []);
  assert.deepEqual(p.end(), []);
  assert.deepEqual(p.feed('event: end\ndata: {}\n\n'), [{ id: '10', event: 'end', data: '{}' }]);
});

test('backoff doubles from 1 s to at most 10 s', () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5].map(backoff), [1000, 2000, 4000, 8000, 10000, 10000]);
});

test('formatters', () => {
  assert.equal(compact(812), '812');
  assert.equal(compact(5300), '5.3k');
  assert.equal(compact(1_200_000), '1.2M');
  assert.equal(seconds(1234), '1.2 s');
  assert.equal(seconds(125_000), '2 min 5 s');
});
