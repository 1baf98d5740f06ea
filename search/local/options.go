package local

import (
	"fmt"
	"log/slog"
)

// Defaults for the options.
const (
	// DefaultMaxFileSize is the largest file indexed; larger files are
	// skipped with a note.
	DefaultMaxFileSize int64 = 10 << 20
	// DefaultPassageSize is the target passage size in bytes, about 300–400
	// tokens of English: enough context for a model to use, small enough
	// that a result cites a precise line range.
	DefaultPassageSize = 1500

	minPassageSize = 200
	maxPassageSize = 64 << 10
)

// Option configures Open.
type Option func(*config) error

type config struct {
	cacheDir    string
	maxFileSize int64
	passageSize int
	logger      *slog.Logger
}

// WithCacheDir sets the root directory of index caches. The index of a
// corpus lives in a sub-directory of it named after a hash of the corpus's
// absolute path, so one root serves many corpora. The default is
// deepgraph/corpus under os.UserCacheDir (for example
// ~/.cache/deepgraph/corpus on Linux).
func WithCacheDir(dir string) Option {
	return func(c *config) error {
		if dir == "" {
			return fmt.Errorf("local: WithCacheDir: empty directory")
		}
		c.cacheDir = dir
		return nil
	}
}

// WithMaxFileSize sets the size above which files are skipped (default
// DefaultMaxFileSize). It must be positive.
func WithMaxFileSize(bytes int64) Option {
	return func(c *config) error {
		if bytes <= 0 {
			return fmt.Errorf("local: WithMaxFileSize(%d): the size must be positive", bytes)
		}
		c.maxFileSize = bytes
		return nil
	}
}

// WithPassageSize sets the target passage size in bytes (default
// DefaultPassageSize; allowed 200 to 65536). Changing it on an existing
// index re-indexes every file on the next Open.
func WithPassageSize(bytes int) Option {
	return func(c *config) error {
		if bytes < minPassageSize || bytes > maxPassageSize {
			return fmt.Errorf("local: WithPassageSize(%d): want %d to %d bytes", bytes, minPassageSize, maxPassageSize)
		}
		c.passageSize = bytes
		return nil
	}
}

// WithLogger sets the logger for refresh summaries and skipped files
// (default: discard). Paths are logged; file contents never are.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("local: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}
