// format.js — small pure formatters shared by the page's modules.

/** compact writes a token count in a few characters: 812, 5.3k, 1.2M. */
export function compact(n) {
  n = Number(n) || 0;
  if (n < 1000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** thousands writes n with separators: 12,345. */
export function thousands(n) {
  return (Number(n) || 0).toLocaleString('en-US');
}

/** seconds writes milliseconds as "0.4 s", "12.3 s", "2 min 5 s". */
export function seconds(ms) {
  const s = (Number(ms) || 0) / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

/** usd writes US dollars as the CLI does: "$0.0123" below a dollar, "$12.34" above. */
export function usd(v) {
  const n = Number(v) || 0;
  return n < 1 ? `$${n.toFixed(4)}` : `$${n.toFixed(2)}`;
}

/** plural writes a count with its noun: "1 source", "3 sources". */
export function plural(n, one, many) {
  n = Number(n) || 0;
  return `${n} ${n === 1 ? one : many}`;
}

const rtf = typeof Intl !== 'undefined' && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat('en', { numeric: 'auto' }) : null;

/** relativeTime writes a timestamp as "just now", "5 minutes ago", … */
export function relativeTime(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const diff = Math.round((t - now) / 1000); // negative: in the past
  const abs = Math.abs(diff);
  if (abs < 45) return 'just now';
  if (!rtf) return new Date(t).toLocaleString();
  if (abs < 3600) return rtf.format(Math.round(diff / 60), 'minute');
  if (abs < 86400) return rtf.format(Math.round(diff / 3600), 'hour');
  if (abs < 86400 * 30) return rtf.format(Math.round(diff / 86400), 'day');
  return new Date(t).toLocaleDateString();
}

/** absoluteTime writes a timestamp in the reader's locale. */
export function absoluteTime(iso) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? '' : new Date(t).toLocaleString();
}
