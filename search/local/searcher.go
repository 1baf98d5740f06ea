package local

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/deepgraph/deepgraph/search"
)

// MaxResultsLimit caps Options.MaxResults for one search.
const MaxResultsLimit = 200

// snippetTokens is the length of Result.Snippet in tokens (FTS5 snippet()).
const snippetTokens = 24

const searchSQL = `
SELECT p.start_line, p.end_line, f.path, f.mtime_ns, x.title, x.body, x.snip, x.score
FROM (
	SELECT rowid AS id, title, body, snippet(passages_fts, 1, '', '', '…', %d) AS snip, -rank AS score
	FROM passages_fts
	WHERE passages_fts MATCH ?1 %s
	ORDER BY rank
	LIMIT ?2
) AS x
JOIN passages p ON p.id = x.id
JOIN files f ON f.id = p.file_id
ORDER BY x.score DESC, f.path, p.start_line`

const sinceFilter = `AND rowid IN (SELECT p2.id FROM passages p2 JOIN files f2 ON f2.id = p2.file_id WHERE f2.mtime_ns >= ?3)`

var (
	searchAll   = fmt.Sprintf(searchSQL, snippetTokens, "")
	searchSince = fmt.Sprintf(searchSQL, snippetTokens, sinceFilter)
)

// Search returns the passages that best match query, best first, as
// search.Results with Provider "local": Title names the file and section,
// URL is the passage's Location (file:///abs/path#L10-L24), Content the
// passage text, Snippet an excerpt around the match, Score the BM25
// relevance (higher is better) and Published the file's modification time.
//
// The query is free text: it is split into words that are OR-combined (with
// an exact-phrase boost for short queries), so any text is safe and a
// passage matching some of the words is still found. When the words are
// common enough that ranking every passage holding one of them would be
// slow, fewer passages are ranked (see the package doc, Queries). A query
// with no words fails with ErrEmptyQuery. opts.MaxResults (default
// search.DefaultMaxResults, at most MaxResultsLimit) bounds the results;
// opts.TimeRange ("day", "week", "month", "year") keeps files modified
// within that period; opts.Language is ignored.
func (ix *Index) Search(ctx context.Context, query string, opts search.Options) ([]search.Result, error) {
	pq, err := parseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	n := opts.MaxResults
	if n <= 0 {
		n = search.DefaultMaxResults
	}
	n = min(n, MaxResultsLimit)
	q, args := searchAll, []any{nil, n}
	if opts.TimeRange != "" {
		d, err := timeRange(opts.TimeRange)
		if err != nil {
			return nil, err
		}
		q, args = searchSince, append(args, time.Now().Add(-d).UnixNano())
	}

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return nil, ErrClosed
	}
	budget := ix.budget
	df := make([]int, len(pq.terms))
	if len(pq.terms) > 1 {
		for i, t := range pq.terms {
			if df[i], err = ix.countMatches(ctx, quote(t), budget+1); err != nil {
				return nil, ix.searchErr(ctx, query, err)
			}
		}
	}
	steps := planMatch(pq, df, budget)
	for i, st := range steps {
		if st.filter != "" && i < len(steps)-1 {
			c, err := ix.countMatches(ctx, st.filter, n)
			if err != nil {
				return nil, ix.searchErr(ctx, query, err)
			}
			if c < n {
				continue
			}
		}
		args[0] = st.match
		return ix.query(ctx, query, q, args, n)
	}
	return nil, nil // unreachable: the last step always runs
}

// countMatches counts the passages matching the MATCH expression match,
// stopping at limit.
func (ix *Index) countMatches(ctx context.Context, match string, limit int) (int, error) {
	var c int
	err := ix.db.QueryRowContext(ctx, countSQL, match, limit).Scan(&c)
	return c, err
}

const countSQL = `SELECT count(*) FROM (SELECT 1 FROM passages_fts WHERE passages_fts MATCH ?1 LIMIT ?2)`

// query runs a search statement and reads at most n results.
func (ix *Index) query(ctx context.Context, query, q string, args []any, n int) ([]search.Result, error) {
	rows, err := ix.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, ix.searchErr(ctx, query, err)
	}
	defer func() { _ = rows.Close() }()

	results := make([]search.Result, 0, n)
	for rows.Next() {
		var (
			loc                    Location
			rel, title, body, snip string
			mtime                  int64
			score                  float64
		)
		if err := rows.Scan(&loc.StartLine, &loc.EndLine, &rel, &mtime, &title, &body, &snip, &score); err != nil {
			return nil, ix.searchErr(ctx, query, err)
		}
		loc.Path = filepath.Join(ix.root, filepath.FromSlash(rel))
		results = append(results, search.Result{
			Title:     title,
			URL:       loc.URL(),
			Snippet:   collapseSpace(snip),
			Content:   body,
			Score:     score,
			Published: time.Unix(0, mtime),
			Provider:  ProviderName,
		})
	}
	if err := rows.Err(); err != nil {
		return nil, ix.searchErr(ctx, query, err)
	}
	return results, nil
}

func (ix *Index) searchErr(ctx context.Context, query string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("local: search %q: %w", truncate(query, 80), ctxErr)
	}
	return fmt.Errorf("local: search %q in corpus %q: %w", truncate(query, 80), ix.root, err)
}

// timeRange maps search.Options.TimeRange to a duration.
func timeRange(r string) (time.Duration, error) {
	const day = 24 * time.Hour
	switch r {
	case "day":
		return day, nil
	case "week":
		return 7 * day, nil
	case "month":
		return 31 * day, nil
	case "year":
		return 366 * day, nil
	default:
		return 0, fmt.Errorf("local: unsupported time range %q; use day, week, month, year or nothing", r)
	}
}
