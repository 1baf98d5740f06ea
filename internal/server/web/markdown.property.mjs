// The page's half of the citation property (issue 23): Markdown that the
// citation pipeline (research/citation.Finalize) wrote, rendered by this
// page's parser, links only to the sources gathered for it.
//
// Run by internal/server's TestPageRendererLinksOnlyGathered, which writes
// the cases: node markdown.property.mjs cases.json, where cases.json is
// {"cases": [{"name", "markdown", "allowed": [url, …]}]}. It prints each
// foreign link and exits 1 when there is one.

import { readFileSync } from 'node:fs';
import { parse, safeHref, walk } from './markdown.js';

const { cases } = JSON.parse(readFileSync(process.argv[2], 'utf8'));
let bad = 0;
let links = 0;
for (const c of cases) {
  const allowed = new Set(c.allowed.map(safeHref).filter(Boolean));
  walk(parse(c.markdown), (n) => {
    if (!('href' in n)) return;
    links++;
    const href = safeHref(n.href);
    if (href === null || allowed.has(href)) return;
    bad++;
    console.log(`${c.name}: ${n.type} to ${n.href} in ${JSON.stringify(c.markdown)}`);
  });
}
console.log(`${cases.length} cases, ${links} links, ${bad} foreign`);
process.exit(bad ? 1 : 0);
