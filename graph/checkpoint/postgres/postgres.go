package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deepgraph/deepgraph/graph/checkpoint/internal/storecodec"
	"github.com/deepgraph/deepgraph/graph/checkpoint/retry"
)

// maxSchemaName is PostgreSQL's limit on an identifier, in bytes; it
// silently cuts longer names.
const maxSchemaName = 63

// Saver is a graph.Checkpointer stored in PostgreSQL. It is safe for
// concurrent use, and any number of Savers — in any number of processes —
// may share one database and schema.
type Saver struct {
	pool     *pgxpool.Pool
	ownsPool bool
	maxBytes int
	retry    retry.Policy
	sql      statements

	// beforeLeaseRead, set by tests only, runs in TakeThread before it
	// reads who holds the thread.
	beforeLeaseRead func()
}

// Option configures a Saver.
type Option func(*settings)

type settings struct {
	schema   string
	maxBytes int
	retry    retry.Policy
}

// WithSchema puts the tables in the named schema, creating it when it is
// missing. Without it they go in the first schema of the connection's
// search_path (usually public).
func WithSchema(name string) Option {
	return func(s *settings) { s.schema = name }
}

// WithRetry sets how transient errors (a server restarting, a connection
// cut, a serialization conflict) are retried: by default (retry.Default)
// for up to 30 s, or until the context's deadline.
func WithRetry(p retry.Policy) Option {
	return func(s *settings) { s.retry = p }
}

// WithMaxBytes bounds one stored document — a checkpoint or a task record —
// read back; a larger one gives an error matching graph.ErrCheckpointTooLarge.
// The default (and what n ≤ 0 means) is the engine's limit on a state or an
// update, graph.DefaultMaxCheckpointBytes, plus room for the rest of a
// checkpoint.
func WithMaxBytes(n int) Option {
	return func(s *settings) { s.maxBytes = n }
}

// Open connects to the database at dsn — a URL such as
// postgres://user:password@host:5432/db?sslmode=require or key=value pairs,
// as pgx reads them — with a pool of its own, and brings the tables up to
// date, waiting out a server that restarts meanwhile (transient errors are
// retried as writes are, see package retry). Close closes the pool.
func Open(ctx context.Context, dsn string, opts ...Option) (*Saver, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message quotes the DSN, password masked only on a best-effort
		// basis: leave it out.
		return nil, errors.New("postgres: the connection string is not valid: give a URL like postgres://user:password@host:5432/database?sslmode=require or key=value pairs (host=... dbname=...); it is not repeated here because it may hold a password")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: making the connection pool: %w", err)
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownsPool = true
	return s, nil
}

// New returns a Saver over a pool the caller owns — Close leaves it open —
// and brings the tables up to date (transient errors retried, as by Open).
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Saver, error) {
	set := settings{maxBytes: storecodec.MaxBytes}
	for _, o := range opts {
		o(&set)
	}
	if set.maxBytes <= 0 {
		set.maxBytes = storecodec.MaxBytes
	}
	if len(set.schema) > maxSchemaName {
		return nil, fmt.Errorf("postgres: the schema name %q is longer than PostgreSQL's %d bytes: choose a shorter one", set.schema, maxSchemaName)
	}
	s := &Saver{pool: pool, maxBytes: set.maxBytes, retry: set.retry, sql: newStatements(set.schema)}
	// The setup is one transaction that checks the tables' version first,
	// so running it again after a transient error (a server restarting,
	// a connection cut) is safe: it finds its own earlier work done.
	if err := s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error { return s.migrate(ctx, set.schema) }); err != nil {
		where := "the search path's schema"
		if set.schema != "" {
			where = fmt.Sprintf("schema %q", set.schema)
		}
		return nil, fmt.Errorf("postgres: setting up the checkpoint tables in %s: %w", where, err)
	}
	return s, nil
}

// Pool returns the pool the Saver uses, for tables of the application's own
// next to the checkpoints.
func (s *Saver) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool when Open made it; a pool given to New stays open.
func (s *Saver) Close() {
	if s.ownsPool {
		s.pool.Close()
	}
}
