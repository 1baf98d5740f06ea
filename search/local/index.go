package local

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/deepgraph/deepgraph/search"
)

// ProviderName is the Name of an Index and the Provider of its results.
const ProviderName = "local"

// ErrClosed is returned by an Index's methods after Close.
var ErrClosed = errors.New("local: index is closed")

// Index is a persistent full-text index of one corpus directory, searched
// with BM25. It implements search.Searcher. Its methods are safe for
// concurrent use: searches run in parallel with each other and with a
// Refresh (they see the index as of the last committed batch), and
// concurrent Refresh calls run one after the other.
type Index struct {
	root     string // absolute corpus directory
	cacheDir string // root of index caches (skipped if inside the corpus)
	dir      string // this corpus's index directory
	db       *sql.DB
	cfg      config
	budget   int // passages a search ranks at most when it can choose (planMatch)
	log      *slog.Logger

	refreshMu sync.Mutex // serialises Refresh

	mu     sync.RWMutex // held shared by operations, exclusively by Close
	closed bool

	statsMu sync.Mutex
	last    RefreshStats
}

var _ search.Searcher = (*Index)(nil)

// Open opens (creating it if needed) the index of the corpus in dir and
// brings it up to date with Refresh before returning. Only files that are
// new or changed since the last Open or Refresh are read; see Refresh. The
// caller must Close the index.
func Open(ctx context.Context, dir string, opts ...Option) (*Index, error) {
	cfg := config{maxFileSize: DefaultMaxFileSize, passageSize: DefaultPassageSize}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	root, err := corpusRoot(dir)
	if err != nil {
		return nil, err
	}
	cacheDir := cfg.cacheDir
	if cacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("local: no user cache directory to keep the corpus index in (%w); set one with WithCacheDir", err)
		}
		cacheDir = filepath.Join(base, "deepgraph", "corpus")
	}
	if cacheDir, err = filepath.Abs(cacheDir); err != nil {
		return nil, fmt.Errorf("local: cache directory %q: %w", cfg.cacheDir, err)
	}
	sum := sha256.Sum256([]byte(root))
	idxDir := filepath.Join(cacheDir, hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(idxDir, 0o700); err != nil {
		return nil, fmt.Errorf("local: cannot create the index directory %q: %w; make it writable or choose another cache directory", idxDir, err)
	}
	if err := checkWritable(idxDir); err != nil {
		return nil, err
	}

	db, err := openStore(ctx, idxDir, root, cfg, log)
	if err != nil {
		return nil, err
	}
	ix := &Index{root: root, cacheDir: cacheDir, dir: idxDir, db: db, cfg: cfg, log: log, budget: defaultCandidateBudget}
	if _, err := ix.Refresh(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return ix, nil
}

// corpusRoot checks that dir is a readable directory and returns its
// absolute path.
func corpusRoot(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("local: no corpus directory given; pass the directory that holds your documents")
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("local: corpus directory %q: %w", dir, err)
	}
	// The walk does not follow symbolic links, so resolve the root itself
	// when it is one (a linked notes folder is common).
	if li, err := os.Lstat(root); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if resolved, err := filepath.EvalSymlinks(root); err == nil {
			root = resolved
		}
	}
	fi, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("local: corpus directory %q does not exist: %w; pass the directory that holds your documents", root, err)
	case err != nil:
		return "", fmt.Errorf("local: cannot access corpus directory %q: %w; check its permissions", root, err)
	case !fi.IsDir():
		return "", fmt.Errorf("local: corpus path %q is a file, not a directory; pass the directory that holds your documents", root)
	}
	f, err := os.Open(root)
	if err == nil {
		_, err = f.Readdirnames(1)
		_ = f.Close()
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("local: cannot read corpus directory %q: %w; check its permissions", root, err)
	}
	return root, nil
}

// checkWritable fails with a clear message when files cannot be created in
// dir (SQLite's own error for that case is obscure).
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("local: the index directory %q is not writable: %w; fix its permissions or choose another cache directory", dir, err)
	}
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
	return nil
}

// Name returns "local".
func (ix *Index) Name() string { return ProviderName }

// Root returns the absolute path of the corpus directory.
func (ix *Index) Root() string { return ix.root }

// IndexDir returns the directory that holds this corpus's index files.
// Deleting it (while the index is closed) forces a full re-index.
func (ix *Index) IndexDir() string { return ix.dir }

// LastRefresh returns the statistics of the most recent completed Refresh
// (including the one Open runs).
func (ix *Index) LastRefresh() RefreshStats {
	ix.statsMu.Lock()
	defer ix.statsMu.Unlock()
	s := ix.last
	s.Skipped = append([]SkippedFile(nil), s.Skipped...)
	return s
}

// Skipped describes the files the most recent Refresh did not index, with
// why (search.Skipper): "path: reason (detail)".
func (ix *Index) Skipped() []string {
	skipped := ix.LastRefresh().Skipped
	out := make([]string, len(skipped))
	for i, s := range skipped {
		out[i] = s.String()
	}
	return out
}

// Close closes the index. It waits for running searches and refreshes
// (cancel their contexts to hurry them). Calling Close again is a no-op.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	if err := ix.db.Close(); err != nil {
		return fmt.Errorf("local: close index %q: %w", ix.dir, err)
	}
	return nil
}
