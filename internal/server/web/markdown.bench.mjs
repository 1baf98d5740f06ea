// Times parse on the pathological inputs of markdown.test.mjs at n and 10n
// characters and prints, as JSON, for each: the milliseconds of the larger
// input and the growth (time of 10n / time of n: 10 for linear work). The
// time is the process's CPU time, best of three, so that other work on a
// busy machine does not count.
// Run: node markdown.bench.mjs [n] — or through internal/server's
// BenchmarkMarkdownRenderer, which reports the figures as metrics.

import { parse } from './markdown.js';
import { PATHOLOGICAL } from './markdown.cases.mjs';

const n = Number(process.argv[2] || 100000);

function time(src) {
  let best = Infinity;
  for (let k = 0; k < 3; k++) {
    const t0 = process.cpuUsage();
    parse(src);
    const t = process.cpuUsage(t0);
    best = Math.min(best, (t.user + t.system) / 1000);
  }
  return best;
}

// Warm the JIT up first, so that the first shape is not timed cold.
for (const make of Object.values(PATHOLOGICAL)) parse(make(n));

const out = {};
for (const [name, make] of Object.entries(PATHOLOGICAL)) {
  const small = time(make(n));
  const large = time(make(10 * n));
  out[name] = { ms: large, growth: large / Math.max(small, 0.001) };
}
console.log(JSON.stringify(out));
