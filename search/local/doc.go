// Package local searches the user's own documents: a directory of Markdown,
// plain text and HTML files, indexed on disk and ranked with BM25. An Index
// is a search.Searcher, so a research graph uses it exactly like a web
// search provider (the CLI exposes it as research --corpus DIR).
//
// # Model
//
// Open(ctx, dir) walks the corpus directory and indexes every supported
// file into passages:
//
//   - Markdown (.md, .markdown, …) is split into blocks at blank lines and
//     headings (ATX and setext; fenced code blocks are kept whole and never
//     read as headings; YAML front matter's title is used).
//   - Plain text (.txt, .text, .rst, .org, .adoc) is split at blank lines.
//   - HTML (.html, .htm, .xhtml) is converted to text by walking its token
//     stream, so every piece of text keeps the source line it is on; scripts,
//     styles, navigation and similar are dropped, headings become sections.
//
// Blocks are gathered into passages of about DefaultPassageSize bytes; a
// heading starts a new passage, a block is split only when it alone is too
// large, and a passage cut for size repeats its last small block at the
// start of the next so a fact on the cut is found whole. Each passage
// records its line range and a title made of the document title (front
// matter, first h1, <title>, or the file name) and the headings above it:
// "Guide › Install › Linux".
//
// Hidden files and directories (.git, .obsidian, …) are not visited,
// symbolic links are not followed, and files over WithMaxFileSize, with NUL
// bytes (binary) or not valid UTF-8 are skipped; RefreshStats.Skipped and
// the logger say which and why. PDF is not supported: the project pins no
// PDF library, and getting reading-order text out of real-world PDFs
// (multi-column layouts, fonts without ToUnicode maps, scanned pages) takes
// more than a pure-Go parser reliably gives. PDFs are listed as skipped
// with advice to convert them to text (pdftotext) first.
//
// A Result points into the file: URL is a file:// URL with a line fragment,
// file:///home/me/notes/guide.md#L10-L24, and ParseLocation turns it back
// into a Location (path and 1-based inclusive lines) for precise citations.
// Title names the file and section, Content is the passage, Snippet a short
// excerpt around the match, Score the BM25 relevance (higher is better).
//
// # Persistence and incremental updates
//
// The index lives in a cache directory, by default
// os.UserCacheDir()/deepgraph/corpus/<hash of the absolute corpus path>
// (WithCacheDir changes the root). Open and Refresh re-index only what
// changed: a file whose size and modification time match the index is not
// read; one whose metadata changed is read and hashed (SHA-256) and
// re-parsed only if its content changed; files that disappeared leave the
// index. RefreshStats counts each case. Changing WithPassageSize, or a new
// version of the parser, re-indexes everything once.
//
// Searches are safe to run concurrently with each other and with Refresh;
// Refresh calls are serialised. A second process on the same index waits
// for the first one's writes rather than failing.
//
// # Queries
//
// Queries come from users and models, so they are never passed to the
// query parser as written: the text is split into words, each word becomes
// a quoted term, and the terms are OR-combined so a passage matching some
// of them is still found, BM25 ranking those with more (and rarer) words
// first. Common English question words are dropped when other words
// remain, and a short query also counts as an exact phrase, which lifts
// passages that contain it verbatim. English words are stemmed (Porter)
// and diacritics folded, so "indexing" finds "indexed" and "cafe" finds
// "café". Scripts written without spaces (Chinese, Japanese) are indexed by
// whole runs of characters and match poorly; that is a known limit.
//
// BM25 costs about 2 µs per ranked passage, so an OR of words found in
// most passages would rank most of the corpus (half a second on 160k
// passages). A search therefore first counts the passages holding each
// word (counting is some 30 times cheaper than ranking, and stops at the
// budget) and ranks at most about 20,000 candidates when it can choose:
//
//   - When the words' passages add up to no more than that, the query runs
//     exactly as described above: a query of content words is ranked as
//     it always was.
//   - Otherwise only passages holding one of the rarest words (as many as
//     fit the budget) are ranked. Every word still counts in the score, the
//     common ones half as much as before relative to the rare ones, and a
//     passage holding only common words is not returned: for "how does water affect zinc plating" the
//     candidates are the passages about zinc or plating.
//   - A query of common words only ("what is not new") ranks the passages
//     holding all of its words; when fewer than the wanted results do, the
//     most common word is dropped from the requirement, and so on, so such
//     a query still returns passages, those holding the most words first.
//
// On 20,000 generated Markdown files (160k passages, Zipf-distributed
// words) this keeps the 95th percentile of query latency under 100 ms
// (BenchmarkCorpus20k).
//
// # Why SQLite FTS5 rather than bleve
//
// The index is SQLite's FTS5 full-text engine through
// github.com/ncruces/go-sqlite3 (SQLite translated from WebAssembly to Go),
// the pure-Go SQLite the project also uses for durable checkpoints, so
// corpus search adds no dependency and keeps CGO_ENABLED=0 builds. FTS5
// gives BM25 ranking with per-column weights (a title match counts three
// times a body match), snippets, the Porter stemmer and Unicode folding,
// and a query syntax we can make safe by construction. The whole index is
// one file with transactions: an incremental update of a file replaces its
// passages atomically, an interrupted refresh leaves a consistent index,
// and WAL mode lets searches read while a refresh writes, across
// processes too. bleve v2.6.1 would bring BM25 as well and better
// per-language analysers, but 53 more modules and a larger binary, a
// directory of segment files with its own locking (one writer process at
// a time) and a separate store for the file metadata the incremental
// update needs. For a personal corpus of thousands to tens of thousands
// of files, FTS5 is the smaller, sturdier choice.
//
// # Example
//
//	ix, err := local.Open(ctx, "/home/me/notes", local.WithLogger(logger))
//	if err != nil {
//		return err
//	}
//	defer ix.Close()
//	results, err := ix.Search(ctx, "how do checkpoints resume a run", search.Options{MaxResults: 5})
//	for _, r := range results {
//		loc, _ := local.ParseLocation(r.URL)
//		fmt.Println(r.Title, loc) // "Design › Checkpoints /home/me/notes/design.md:40-58"
//	}
package local
