package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"
)

// RefreshStats reports what a Refresh did.
type RefreshStats struct {
	// Scanned counts the supported files seen (Markdown, text, HTML) that
	// were within the size limit.
	Scanned int
	// Indexed counts files whose passages were (re)built: new files and
	// files whose content changed.
	Indexed int
	// Touched counts files whose size or modification time changed but
	// whose content hash did not: only their metadata was updated.
	Touched int
	// Unchanged counts files with the same size and modification time as
	// when indexed: they were not even read.
	Unchanged int
	// Removed counts files dropped from the index because they were
	// deleted, or are now skipped.
	Removed int
	// Ignored counts files that are not candidates at all: hidden files
	// and files of other types (images, archives, source code, …).
	Ignored int
	// Skipped lists candidate files that were not indexed, with why.
	Skipped []SkippedFile
	// Files and Passages are the totals in the index after the refresh.
	Files, Passages int
	// Duration is how long the refresh took.
	Duration time.Duration
}

// SkipReason says why a file was not indexed.
type SkipReason string

// Reasons for skipping a file.
const (
	SkipTooLarge    SkipReason = "too large"
	SkipBinary      SkipReason = "binary content"
	SkipNotUTF8     SkipReason = "not UTF-8 text"
	SkipUnsupported SkipReason = "unsupported format"
	SkipSymlink     SkipReason = "symbolic link"
	SkipUnreadable  SkipReason = "unreadable"
)

// SkippedFile is a candidate file that was not indexed.
type SkippedFile struct {
	// Path is relative to the corpus directory.
	Path   string
	Reason SkipReason
	// Detail says more, and what the user can do about it.
	Detail string
}

// String returns "path: reason (detail)".
func (s SkippedFile) String() string {
	if s.Detail == "" {
		return s.Path + ": " + string(s.Reason)
	}
	return s.Path + ": " + string(s.Reason) + " (" + s.Detail + ")"
}

// commitBatch is the number of files written per transaction: large enough
// to amortise commits, small enough that an interrupted refresh keeps most
// of its work and readers see progress.
const commitBatch = 512

// job is a file the walker found new or changed (by size or mtime).
type job struct {
	rel, abs    string
	kind        fileKind
	size, mtime int64
	old         *fileRow // nil for a new file
}

// result is a worker's verdict on a job.
type result struct {
	job
	skip     *SkippedFile
	hash     []byte
	touch    bool // content unchanged: update metadata only
	passages []passage
}

// Refresh brings the index up to date with the corpus directory. It walks
// the directory (skipping hidden files and directories and symbolic links),
// and for each Markdown, text or HTML file compares size and modification
// time with the index: equal means unchanged and the file is not read;
// otherwise the file is read and hashed, and re-parsed only if the hash
// differs. Files that disappeared, or are now skipped, are removed. Work is
// committed in batches, so a cancelled Refresh keeps what it finished and
// the next one continues from there. Searches keep running meanwhile.
func (ix *Index) Refresh(ctx context.Context) (RefreshStats, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return RefreshStats{}, ErrClosed
	}
	ix.refreshMu.Lock()
	defer ix.refreshMu.Unlock()

	start := time.Now()
	stats, err := ix.refresh(ctx)
	stats.Duration = time.Since(start)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return stats, fmt.Errorf("local: refresh of corpus %q interrupted: %w", ix.root, err)
		}
		return stats, fmt.Errorf("local: refresh of corpus %q: %w", ix.root, err)
	}
	ix.log.Info("local: corpus index refreshed", "corpus", ix.root, "files", stats.Files, "passages", stats.Passages,
		"indexed", stats.Indexed, "touched", stats.Touched, "unchanged", stats.Unchanged, "removed", stats.Removed,
		"skipped", len(stats.Skipped), "duration", stats.Duration)
	ix.statsMu.Lock()
	ix.last = stats
	ix.statsMu.Unlock()
	return stats, nil
}

func (ix *Index) refresh(ctx context.Context) (RefreshStats, error) {
	existing, err := loadFiles(ctx, ix.db)
	if err != nil {
		return RefreshStats{}, fmt.Errorf("read index: %w", err)
	}

	var (
		walkStats, writeStats RefreshStats
		walkKept              = make(map[string]bool, len(existing))
		writeKept             = make(map[string]bool)
	)
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan job, 2*workers)
	results := make(chan result, 2*workers)
	g, gctx := errgroup.WithContext(ctx)

	g.Go(func() error {
		defer close(jobs)
		return ix.walk(gctx, existing, jobs, &walkStats, walkKept)
	})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				r := ix.load(j)
				select {
				case results <- r:
				case <-gctx.Done():
					// Drain so the walker is not left blocked.
					for range jobs {
					}
					return
				}
			}
		})
	}
	g.Go(func() error {
		wg.Wait()
		close(results)
		return nil
	})
	w := &writer{db: ix.db, batch: commitBatch}
	g.Go(func() error {
		err := ix.write(gctx, w, results, &writeStats, writeKept)
		if err != nil {
			// Returning cancels gctx, which stops the walker and the
			// workers (their sends select on it).
			w.rollback()
			return err
		}
		return w.commit(gctx)
	})
	if err := g.Wait(); err != nil {
		return mergeStats(walkStats, writeStats), err
	}

	stats := mergeStats(walkStats, writeStats)
	for rel, row := range existing {
		if walkKept[rel] || writeKept[rel] {
			continue
		}
		if err := w.remove(ctx, row.id); err != nil {
			w.rollback()
			return stats, fmt.Errorf("remove %q from the index: %w", rel, err)
		}
		stats.Removed++
	}
	if err := w.commit(ctx); err != nil {
		return stats, fmt.Errorf("remove files from the index: %w", err)
	}

	if err := ix.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM passages)`).
		Scan(&stats.Files, &stats.Passages); err != nil {
		return stats, fmt.Errorf("count index: %w", err)
	}
	return stats, nil
}

func mergeStats(walk, write RefreshStats) RefreshStats {
	s := walk
	s.Indexed, s.Touched = write.Indexed, write.Touched
	s.Skipped = append(s.Skipped, write.Skipped...)
	return s
}

// walk finds candidate files and sends the new or changed ones to jobs.
func (ix *Index) walk(ctx context.Context, existing map[string]fileRow, jobs chan<- job, st *RefreshStats, kept map[string]bool) error {
	return filepath.WalkDir(ix.root, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			if p == ix.root {
				return fmt.Errorf("read corpus directory: %w", err)
			}
			ix.skip(st, ix.rel(p), SkipUnreadable, err.Error()+"; check its permissions")
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != ix.root && (isHidden(name) || p == ix.cacheDir || p == ix.dir) {
				return filepath.SkipDir
			}
			return nil
		}
		kind := kindOf(name)
		switch {
		case isHidden(name):
			st.Ignored++
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			if kind != kindOther {
				ix.skip(st, ix.rel(p), SkipSymlink, "links are not followed; copy the file into the corpus or index its directory")
			} else {
				st.Ignored++
			}
			return nil
		case !d.Type().IsRegular() || kind == kindOther:
			st.Ignored++
			return nil
		case kind == kindPDF:
			ix.skip(st, ix.rel(p), SkipUnsupported, "PDF is not supported; convert it to text (for example with pdftotext) next to it")
			return nil
		}
		rel := ix.rel(p)
		info, err := d.Info()
		if err != nil {
			ix.skip(st, rel, SkipUnreadable, err.Error())
			return nil
		}
		if info.Size() > ix.cfg.maxFileSize {
			ix.skip(st, rel, SkipTooLarge, fmt.Sprintf("%d bytes, over the limit of %d; raise it with WithMaxFileSize", info.Size(), ix.cfg.maxFileSize))
			return nil
		}
		st.Scanned++
		j := job{rel: rel, abs: p, kind: kind, size: info.Size(), mtime: info.ModTime().UnixNano()}
		if old, ok := existing[rel]; ok {
			if old.size == j.size && old.mtime == j.mtime {
				st.Unchanged++
				kept[rel] = true
				return nil
			}
			j.old = &old
		}
		select {
		case jobs <- j:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// load reads, checks, hashes and (if changed) parses one file.
func (ix *Index) load(j job) result {
	r := result{job: j}
	skip := func(reason SkipReason, detail string) result {
		r.skip = &SkippedFile{Path: j.rel, Reason: reason, Detail: detail}
		return r
	}
	f, err := os.Open(j.abs)
	if err != nil {
		return skip(SkipUnreadable, err.Error())
	}
	data, err := io.ReadAll(io.LimitReader(f, ix.cfg.maxFileSize+1))
	_ = f.Close()
	if err != nil {
		return skip(SkipUnreadable, err.Error())
	}
	if int64(len(data)) > ix.cfg.maxFileSize {
		return skip(SkipTooLarge, fmt.Sprintf("over the limit of %d bytes; raise it with WithMaxFileSize", ix.cfg.maxFileSize))
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return skip(SkipBinary, "contains NUL bytes")
	}
	if !utf8.Valid(data) {
		return skip(SkipNotUTF8, "convert it to UTF-8 (for example with iconv) to index it")
	}
	sum := sha256.Sum256(data)
	r.hash = sum[:]
	if j.old != nil && bytes.Equal(j.old.hash, r.hash) {
		r.touch = true
		return r
	}
	text := strings.TrimPrefix(string(data), "\uFEFF")
	doc := parse(j.kind, text, filepath.Base(j.abs))
	r.passages = chunk(doc, ix.cfg.passageSize)
	return r
}

// write applies worker results to the index.
func (ix *Index) write(ctx context.Context, w *writer, results <-chan result, st *RefreshStats, kept map[string]bool) error {
	for r := range results {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case r.skip != nil:
			ix.skip(st, r.skip.Path, r.skip.Reason, r.skip.Detail)
		case r.touch:
			if err := w.touchFile(ctx, r.old.id, r.size, r.mtime); err != nil {
				return fmt.Errorf("update %q: %w", r.rel, err)
			}
			st.Touched++
			kept[r.rel] = true
		default:
			if err := w.index(ctx, r.rel, r.size, r.mtime, r.hash, r.passages); err != nil {
				return fmt.Errorf("index %q: %w", r.rel, err)
			}
			st.Indexed++
			kept[r.rel] = true
		}
	}
	return nil
}

// skip records and logs a skipped file.
func (ix *Index) skip(st *RefreshStats, rel string, reason SkipReason, detail string) {
	st.Skipped = append(st.Skipped, SkippedFile{Path: rel, Reason: reason, Detail: detail})
	ix.log.Info("local: file not indexed", "corpus", ix.root, "path", rel, "reason", string(reason), "detail", detail)
}

// rel returns p relative to the corpus root, slash-separated.
func (ix *Index) rel(p string) string {
	r, err := filepath.Rel(ix.root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

func isHidden(name string) bool { return strings.HasPrefix(name, ".") }
