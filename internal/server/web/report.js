// report.js — what a reader takes away from a run: its report copied as
// Markdown, or downloaded as Markdown or as its JSON document.
//
// The report is untrusted text: it only ever goes to the clipboard or into
// a Blob the browser saves; it never becomes markup here.

const str = (v) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));

/**
 * reportMarkdown is a run's report as Markdown: a research report's
 * `markdown` (the answer and its Sources list, as research prints it), an
 * agent's answer (it ends with its sources).
 */
export function reportMarkdown(report) {
  if (!report || typeof report !== 'object') return '';
  const md = str(report.markdown).trim() || str(report.answer).trim();
  return md ? `${md}\n` : '';
}

/** reportJSON is the run's JSON document, indented as the CLI prints it. */
export function reportJSON(report) {
  return `${JSON.stringify(report, null, 2)}\n`;
}

/** fileName is "research-<run id>.<ext>" (or agent-…), safe for any file system. */
export function fileName(kind, runId, ext) {
  const id = str(runId).replace(/[^A-Za-z0-9_-]/g, '') || 'report';
  return `${kind === 'agent' ? 'agent' : 'research'}-${id}.${ext}`;
}

/**
 * copyText puts text on the clipboard: the Clipboard API where the page
 * may use it, else a hidden textarea and the copy command. It resolves to
 * whether it worked.
 */
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Denied (no user gesture, no permission): try the old way.
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

/** download saves text as a file called name, of MIME type type. */
export function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.rel = 'noopener';
  a.className = 'offscreen';
  document.body.append(a);
  a.click();
  a.remove();
  // The download has started from the click; the URL is not needed after.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
