// Pathological inputs for the page's Markdown parser: each makes n
// characters of a shape that a parser looking ahead from every opener
// scans in quadratic time. markdown.test.mjs checks that parse's work grows
// linearly on them; markdown.bench.mjs times them.
export const PATHOLOGICAL = {
  'nested parentheses': (n) => '('.repeat(n / 2) + 'https://x.example/' + ')'.repeat(n / 2),
  'parentheses in a URL': (n) => 'https://x.example/' + '('.repeat(n / 2) + ')'.repeat(n / 2),
  'unclosed destinations': (n) => '[x](' + '('.repeat(n),
  'unclosed links': (n) => '[x](y'.repeat(n / 5),
  'unclosed images': (n) => '![a]('.repeat(n / 5),
  'links with titles': (n) => '[a](b "x [c](<d (e'.repeat(n / 19),
  'open brackets': (n) => '['.repeat(n),
  'nested quotes': (n) => '>'.repeat(n) + ' deep',
  'nested lists': (n) => '- '.repeat(n / 2) + 'x',
  'emphasis openers': (n) => '*a '.repeat(n / 3),
  'strong runs': (n) => '**'.repeat(n / 2),
  'underscores': (n) => '_'.repeat(n) + 'x',
  'mixed emphasis': (n) => '*_~'.repeat(n / 3),
  'backticks': (n) => '`'.repeat(n),
  'backtick runs': (n) => Array.from({ length: n / 8 }, (_, i) => '`'.repeat((i % 7) + 1) + ' a').join(''),
  'bare URLs': (n) => 'http://'.repeat(n / 7),
  'autolinks': (n) => '<http://x'.repeat(n / 9),
};

