// Package citation turns search-grounded model replies into text with
// citation markers, and restores the real URLs in a final answer.
//
// # The pipeline
//
// It follows Google's Gemini deep-search reference
// (gemini-fullstack-langgraph-quickstart), whose web_research step asks
// Gemini with the google_search tool and turns the reply's grounding
// metadata into Markdown citations:
//
//  1. ResolveURLs gives each distinct chunk URI (a long redirect URL) a
//     short URL, ShortURLPrefix + "<queryID>-<index of its first chunk>",
//     so that prompts spend few tokens on URLs.
//  2. Citations turns each grounding support into a Citation: where the
//     supported text ends, and one Source per grounding chunk it cites.
//  3. InsertMarkers puts each citation's marker, " [label](short URL)",
//     where its text ends, going from the end of the text backwards.
//  4. Ground does 1–3 on an *llm.Response and returns the marked text and
//     the sources gathered (every segment, in citation order).
//  5. The answer model writes the final answer from the marked summaries,
//     copying markers. Finalize then maps each short URL back to its real
//     URL, drops the citations that point to nothing gathered, and numbers
//     the rest: [n](url), one number per page, with Result.Sources in
//     number order.
//
// Back ends without grounding (any model plus a search API) make a Source
// per search result with ForResult, show the model the sources labelled
// S1…Sn, and convert its [S1]-style citations with FromLabels into the same
// marker form, so step 5 is the same for both.
//
// # What is fixed relative to the reference
//
// The reference's semantics are kept — the marker text with its leading
// space, the (end, start)-descending stable insertion order (so markers at
// one position appear by ascending start, and equal spans in reverse API
// order), the short-URL scheme, sources with duplicates in citation order —
// except for these bugs:
//
//   - Offsets are UTF-8 byte offsets, as the Gemini API documents them. The
//     reference slices by code points, so in any non-ASCII text its markers
//     land inside words, past the end, or inside earlier markers. Here an
//     offset is clamped to its part and, if it falls inside a multi-byte
//     character, moved forward to the next character boundary.
//   - Offsets are relative to the part named by part_index (the byte
//     lengths of earlier parts are added); the reference ignores it.
//   - Missing metadata, chunks or supports, out-of-range chunk indices and
//     part indices never panic; they add no marker. The reference crashes on
//     several of them.
//   - A source whose title has no '.' keeps its whole title as label, and one
//     without a title is labelled with its URI's host; the reference drops
//     both silently (its label is title.split('.')[:-1][0]). Labels are made
//     safe as Markdown link text (one line, no brackets).
//   - Finalize matches short URLs as whole tokens; the reference's substring
//     replacement turns a citation of …/id/1-10 into the URL of …/id/1-1
//     followed by "0". It also removes invented short URLs and links to
//     pages not gathered instead of leaving dead links, and lists a page
//     found under two short URLs once.
//
// # Missing end offsets
//
// llm.GroundingSupport has plain int offsets, and the Gemini API omits
// zero-valued fields, so a support without a segment, one whose segment
// has no end, and one whose end is 0 all reach this package as EndIndex 0.
// None of them covers any text, and the reference skips the first two, so
// Citations skips every support with EndIndex <= 0. A missing start is 0,
// which is what the API means by omitting it.
//
// # Untrusted text
//
// Titles come from web pages and answers from a model that read them, so
// both are untrusted. Labels are cleaned before they become link text.
// Finalize treats every link in the answer as suspect: only links to
// sources gathered in this run survive, so a page that injected
// instructions cannot make the answer carry its own links or tracking
// images; it errs on the side of seeing a link (a lax renderer's link is
// still checked) and repeats its pass until the text is a fixed point,
// because removing a link can join its neighbours into a new one. A bare
// URL that names no gathered source is shown as its host in a code span
// ("cite http://evil.example/x" → "cite `evil.example`"). Code spans and
// blocks are left as they are, but only where every renderer surely shows
// code, so that no link hides from the check in text that a renderer would
// read as prose. SourcesList escapes titles and encodes URLs.
//
// Then a guard reads the result as a CommonMark + GFM renderer does
// (goldmark, with tables, strikethrough and linkify) and makes inert
// whatever it would link that resolves to no gathered source — a link with
// an escaped bracket in its text, a reference definition to "//host/x",
// "https:host" or "https&#58;//…", a www. autolink in emphasis, raw HTML
// that links or loads something — and reads again until nothing is left
// (guard.go). E-mail autolinks are left: they name no page. The property
// is fuzzed (FuzzFinalizeRendered) and checked on the web page's own
// renderer too (internal/server).
//
// # Pages, not spellings
//
// Sources are merged by page: the URLs of one page under different
// spellings — http or https, host case, default port, trailing slash,
// tracking parameters, fragment — are one source (search.PageKey), shown
// under the first https spelling gathered, else the first. A citation of
// any spelling cites that source.
//
// # Words are kept
//
// A link written as prose keeps its text: "See [the docs](…) now" becomes
// "See the docs [1](…) now" when the page was gathered and "See the docs
// now" when it was not, whatever the text says. A link whose text is a
// citation number, the page's own label or host, or whose target is a
// short URL is a citation marker and becomes [n](url), or goes. Removing
// citations never leaves the conjunctions that joined them ("[a] and [b]
// and [c]"). A list of sources the model wrote at the end of its answer
// ("**Sources:**", "## References" and links) is dropped: the answer's
// own list follows, numbered as its citations are.
//
// # Linear time
//
// Every look-ahead is bounded or answered from tables built once per
// pass, duplicate reference definitions resolve to the first (as in
// CommonMark), and paragraphs that would make goldmark's parser quadratic
// are made inert before it reads them, so the work is linear in the
// answer: BenchmarkFinalizeGrowth reports the 1 MB / 100 KB time ratio of
// the adversarial shapes.
//
// # Parity with the reference
//
// Options.ReferenceLabels reproduces the reference's label rule exactly,
// dropping sources whose title has no '.', for golden tests against it.
// With it, the shared test vectors are reproduced exactly, byte-offset
// output where the reference is wrong about offsets.
//
// # Example
//
//	text, sources := citation.Ground(resp, queryID, citation.Options{})
//	// … later, once the answer model has written from the summaries:
//	res := citation.Finalize(answer, gatheredSources)
//	fmt.Println(res.Text)            // "… [1](https://…) …"
//	for i, s := range res.Sources {  // numbered 1…n
//		fmt.Println(i+1, s.Title, s.URL)
//	}
package citation
