// Package research is Google's Gemini deep-search pattern built on package
// graph: generate search queries → research each in parallel → reflect on
// what is missing → loop with follow-up queries or write the final answer
// with citations that are checked against the sources actually gathered.
//
//	START → generate_query ─(one Send per query)→ web_research ×N → reflection
//	reflection ─(follow-ups)→ web_research ×M → reflection …
//	reflection ─(sufficient, out of loops, or nothing new to search)→ finalize_answer → END
//
// Two back ends do the web research of one query:
//
//   - GeminiBackend: a Gemini model with Google Search grounding. Citations
//     come from the grounding metadata: UTF-8 byte offsets relative to their
//     part, markers inserted from the end backwards, short-URL tokens instead
//     of the long redirect URLs (package citation).
//   - SearchBackend: any model plus any search.Searcher — SearXNG, Tavily,
//     Brave, a fallback chain of them, or a local corpus (search/local). It
//     searches, reads the top pages when the provider returns only snippets,
//     and has the model summarise the sources by label; the labels become
//     the same citation markers.
//
// GeminiBackend resolves the grounding redirects (130-character
// vertexaisearch.cloud.google.com URLs titled with a bare domain) to the
// real pages' URLs and titles, by default: SourceResolver reads each
// redirect's Location without following it and the start of the page for
// its <title>, behind the SSRF guard (search/netguard), in parallel, within
// a deadline, remembering what it resolved for the Researcher's life. In
// a run this is off the critical path: a research task starts resolving
// its redirects in the background and goes on at once; the answer's
// citations show the pages resolved by the time it is written
// (SourceFinisher), and the next tasks and runs find them remembered. The
// same page reached through several redirects is one source; a redirect
// that cannot be resolved in time — a refused, failing or slow target —
// stays as it is, and never delays the answer.
// GeminiBackend.KeepRedirects turns this off.
//
// In both, every source gets a stable per-run token, and the final answer
// keeps only citations that map to a source gathered in this run: anything
// else — a hallucinated token, a URL the run never retrieved — is removed
// and counted (Report.Dropped). The report ends with a numbered, deduplicated
// Sources list, and the answer is written in the language of the question.
//
// Differences from the reference implementation, each a bug fixed:
// the run's loop limit is honoured; follow-up queries are not re-run in
// later rounds, and a query already searched in the turn is not searched
// again; "not sufficient" without any new follow-up query finalises instead
// of ending without an answer; each query is counted once; a follow-up
// question on the same thread starts a fresh round with fresh citation ids;
// citation offsets are bytes, per part; short-URL replacement matches whole
// tokens (no 1-1 / 1-10 collision); missing grounding metadata never
// crashes a run.
//
// The summaries quote web pages, so they reach the reflection and answer
// prompts inside an <untrusted> element (internal/fence) with the
// instruction that its content is data, not instructions; no variant of
// its closing tag in a summary can end it early.
//
// # The context budget
//
// Reflection and the answer read the findings within a budget
// (Config.ContextBudget, in tokens counted as CharsPerToken characters;
// by default DefaultContextBudgetFor the answer model: 24,000 tokens, 8,000
// for open-weight models usually served with a small window). The answer
// gets the whole budget, reflection a third of it: it only decides what to
// search next, and it runs once a loop, so its prompt is bounded — at the
// default, under 40,000 characters whatever the loops — instead of growing
// with every round, and a run's tokens grow linearly with its loops.
//
// While the findings in full fit, a prompt has them all. Beyond that, each
// finding that has no note yet gets one, once per run: the CompactionModel
// (default: the reflection model) condenses a batch of findings into one
// note each, about a quarter of its summary, keeping the citation markers
// of the facts it keeps (RoleCompaction in Report.Usage). The prompt then
// shows every finding as its note, newest first while they fit, and
// replaces notes with full summaries, newest first, while the budget
// allows; what does not fit even as a note is left out, oldest first, and
// the prompt says how many. The reflection also sees the previous
// reflection's knowledge gap, and the queries already searched.
//
// Notes are a view: Findings keep their summaries and Sources. The final
// answer is checked against every source gathered in the turn, so a
// citation copied from a note resolves like one copied from a summary, and
// a marker a note invented is dropped like any other.
//
// # Prompt caching
//
// A turn's reflections resend the same head (the question, the date) and
// the findings so far, which grow at their end, with what changes from one
// reflection to the next — the queries searched, the last knowledge gap —
// last: the providers that cache prompt prefixes by themselves (OpenAI,
// Gemini) serve each reflection's start from the previous one's. For
// Anthropic, whose cache ends at explicit breakpoints and finds an earlier
// prefix only at a content block's boundary, a reflection is sent, while
// its findings fit in full and another reflection may read it, marked
// llm.CachePrompt and laid out as the head, one message (one content block)
// per finding, and the tail as a Transient message: the breakpoint follows
// the last finding. Condensed or left out, findings change from one
// reflection to the next, so such a reflection is one message and asks
// for no cache write. The other prompts share no prefix a cache could
// serve: each summary prompt's sources are its own, and the answer, the
// turn's last call, offers no tools where the reflections offer their
// schema's tool, and Anthropic's cache key begins with the tools.
//
// # The research budget
//
// Each research (summary) prompt has a budget too (Config.ResearchBudget,
// in tokens): by default ResearchBudgetFor the run's queries and loops,
// RunResearchBudget shared by the queries × loops prompts a run can make,
// each from MinResearchBudget to MaxResearchBudget — 4,000 tokens at low and
// medium effort, 1,500 at high — so that a run's research prompts together
// stay bounded whatever its effort. The web_research task carries it to the
// back end (Query.Budget); SearchBackend shortens the pages' text to fit,
// fairly: sources shorter than an equal share stay whole, the longer ones
// are cut to one length, each keeping its start, never inside a label or a
// link. The sources and their labels are unchanged, so citations resolve
// as before.
//
// A run that degrades says so rather than going on silently: pages the
// network guard refused or that could not be read, searches that found
// nothing and corpus files that were not indexed are Warnings — activities
// on the timeline as they happen, summed up per kind in Report.Warnings —
// and when no page could be read at all the report says its answer is
// based on search snippets only (Report.SnippetsOnly).
//
// A Researcher is built from a Config with models per role and a back end;
// Run returns a Report (Observe receives the activities, the answer's
// tokens as they come), Stream the graph's events (Describe turns them into
// timeline activities, ReportFrom the last event's state into the Report),
// Graph the compiled graph (Mermaid). Package config
// builds a Config from files, environment and flags, and cmd/research is the
// command line tool around it all.
package research
