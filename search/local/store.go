package local

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	sqlite3 "github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"
)

// schemaVersion changes when the tables change; an index with another
// version is dropped and rebuilt.
const schemaVersion = "1"

// parserVersion changes when parsing or chunking changes; together with the
// passage size it forms the fingerprint that, when it differs, makes every
// file be re-indexed.
const parserVersion = "1"

// indexFile is the SQLite database's name inside the index directory.
const indexFile = "index.db"

// The schema. files has one row per indexed file (path relative to the
// corpus, slash-separated); passages one row per passage, whose id is the
// rowid of its row in the FTS5 table passages_fts. The FTS5 table stores
// the passage title, text and file path, all three searchable; the porter
// stemmer over unicode61 (diacritics folded) makes "running" find "runs".
// Its rank is BM25 with the title weighted 3×.
var schemaStmts = []string{
	`CREATE TABLE IF NOT EXISTS files(
		id       INTEGER PRIMARY KEY,
		path     TEXT NOT NULL UNIQUE,
		size     INTEGER NOT NULL,
		mtime_ns INTEGER NOT NULL,
		hash     BLOB NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS passages(
		id         INTEGER PRIMARY KEY,
		file_id    INTEGER NOT NULL REFERENCES files(id),
		start_line INTEGER NOT NULL,
		end_line   INTEGER NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS passages_file ON passages(file_id)`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(
		title, body, path,
		tokenize = 'porter unicode61 remove_diacritics 2'
	)`,
	`INSERT INTO passages_fts(passages_fts, rank) VALUES('rank', 'bm25(3.0, 1.0, 1.0)')`,
}

// openStore opens the index database in dir, creating or migrating the
// schema. A file that is not a database (a crash left garbage, or someone
// else's file) is removed and rebuilt: it is only a cache.
func openStore(ctx context.Context, dir, root string, cfg config, log *slog.Logger) (*sql.DB, error) {
	path := filepath.Join(dir, indexFile)
	db, err := openDB(ctx, path, root, cfg)
	if err == nil {
		return db, nil
	}
	if !errors.Is(err, sqlite3.NOTADB) && !errors.Is(err, sqlite3.CORRUPT) {
		return nil, err
	}
	log.Warn("local: corpus index is damaged; rebuilding it", "index", path, "error", err)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if rmErr := os.Remove(path + suffix); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			return nil, fmt.Errorf("local: the corpus index %q is damaged (%w) and cannot be removed: %w; delete the directory %q", path, err, rmErr, dir)
		}
	}
	return openDB(ctx, path, root, cfg)
}

func openDB(ctx context.Context, path, root string, cfg config) (*sql.DB, error) {
	db, err := openFTS(dsn(path))
	if err != nil {
		return nil, fmt.Errorf("local: open corpus index %q: %w", path, err)
	}
	db.SetMaxOpenConns(max(4, 2*runtime.GOMAXPROCS(0)))
	db.SetMaxIdleConns(max(2, runtime.GOMAXPROCS(0)))
	// WAL mode is set here, once, not by each connection: setting it takes
	// the file's exclusive lock, for which SQLite does not wait, and the
	// file keeps it.
	_, err = db.ExecContext(ctx, `PRAGMA journal_mode = WAL`)
	if err == nil {
		err = initSchema(ctx, db, root, cfg)
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("local: prepare corpus index %q: %w; delete the directory %q to rebuild it, or choose another cache directory",
			path, err, filepath.Dir(path))
	}
	return db, nil
}

// openFTS opens the database named by the data source name with FTS5 on
// each connection (github.com/ncruces/go-sqlite3 keeps its extensions in
// packages of their own).
func openFTS(name string) (*sql.DB, error) {
	return driver.Open(name, fts5.Register)
}

// dsn builds the driver's data source name: a file: URI (so any character
// in the path is safe) with a generous busy timeout for a second process on
// the same index, and IMMEDIATE write transactions so writers queue on the
// busy timeout instead of failing on lock upgrade. openDB sets WAL
// journaling, which lets searches read while a refresh writes.
func dsn(path string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return "file:" + (&url.URL{Path: p}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}

func initSchema(ctx context.Context, db *sql.DB, root string, cfg config) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()

	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`); err != nil {
		return err
	}
	meta := func(key string) (string, error) {
		var v string
		err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		return v, err
	}
	setMeta := func(key, value string) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	}

	version, err := meta("schema_version")
	if err != nil {
		return err
	}
	if version != "" && version != schemaVersion {
		for _, t := range []string{"passages_fts", "passages", "files"} {
			if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+t); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM meta`); err != nil {
			return err
		}
	}
	for _, s := range schemaStmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}

	// A different parser, passage size or corpus root invalidates every
	// passage: forget the files so that the refresh re-indexes them all.
	fingerprint := "parser=" + parserVersion + ";passage=" + strconv.Itoa(cfg.passageSize) + ";root=" + root
	old, err := meta("fingerprint")
	if err != nil {
		return err
	}
	if old != fingerprint {
		for _, s := range []string{`DELETE FROM passages_fts`, `DELETE FROM passages`, `DELETE FROM files`} {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return err
			}
		}
	}
	for k, v := range map[string]string{"schema_version": schemaVersion, "fingerprint": fingerprint, "root": root} {
		if err := setMeta(k, v); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// fileRow is what the index remembers about a file.
type fileRow struct {
	id    int64
	size  int64
	mtime int64 // Unix nanoseconds
	hash  []byte
}

// loadFiles reads the files table, keyed by relative path.
func loadFiles(ctx context.Context, db *sql.DB) (map[string]fileRow, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, path, size, mtime_ns, hash FROM files`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	files := make(map[string]fileRow)
	for rows.Next() {
		var r fileRow
		var path string
		if err := rows.Scan(&r.id, &path, &r.size, &r.mtime, &r.hash); err != nil {
			return nil, err
		}
		files[path] = r
	}
	return files, rows.Err()
}

// writer applies refresh results to the database in batched transactions.
//
// Within a transaction it writes the files and passages tables at once but
// queues the FTS5 changes and applies them just before the commit. FTS5
// keeps inserted text in an in-memory hash and flushes it as a new segment
// whenever a statement that needs a statement journal begins (an upsert, a
// multi-row delete); interleaving those with FTS5 inserts would flush one
// tiny segment per file and spend most of the refresh merging them.
type writer struct {
	db    *sql.DB
	tx    *sql.Tx
	n     int // files written in the open transaction
	batch int

	ftsDel []int64  // passage ids to delete from passages_fts
	ftsIns []ftsRow // rows to insert into passages_fts

	upsert, touch, oldPassages, delPassages, delFile, insPassage, delFTS, insFTS *sql.Stmt
}

type ftsRow struct {
	id                int64
	title, body, path string
}

func (w *writer) begin(ctx context.Context) error {
	if w.tx != nil {
		return nil
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var s *sql.Stmt
		s, err = tx.PrepareContext(ctx, q)
		return s
	}
	w.upsert = prep(`INSERT INTO files(path, size, mtime_ns, hash) VALUES(?, ?, ?, ?)
		ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, hash = excluded.hash
		RETURNING id`)
	w.touch = prep(`UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?`)
	w.oldPassages = prep(`SELECT id FROM passages WHERE file_id = ?`)
	w.delPassages = prep(`DELETE FROM passages WHERE file_id = ?`)
	w.delFile = prep(`DELETE FROM files WHERE id = ?`)
	w.insPassage = prep(`INSERT INTO passages(file_id, start_line, end_line) VALUES(?, ?, ?)`)
	w.delFTS = prep(`DELETE FROM passages_fts WHERE rowid = ?`)
	w.insFTS = prep(`INSERT INTO passages_fts(rowid, title, body, path) VALUES(?, ?, ?, ?)`)
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	w.tx = tx
	return nil
}

// done counts one file written and commits when the batch is full.
func (w *writer) done(ctx context.Context) error {
	w.n++
	if w.n >= w.batch {
		return w.commit(ctx)
	}
	return nil
}

// commit applies the queued FTS5 changes and commits the transaction.
func (w *writer) commit(ctx context.Context) error {
	if w.tx == nil {
		return nil
	}
	for _, id := range w.ftsDel {
		if _, err := w.delFTS.ExecContext(ctx, id); err != nil {
			w.rollback()
			return err
		}
	}
	for _, r := range w.ftsIns {
		if _, err := w.insFTS.ExecContext(ctx, r.id, r.title, r.body, r.path); err != nil {
			w.rollback()
			return err
		}
	}
	err := w.tx.Commit() // also closes the statements prepared on it
	w.reset()
	return err
}

func (w *writer) rollback() {
	if w.tx != nil {
		_ = w.tx.Rollback()
	}
	w.reset()
}

func (w *writer) reset() {
	w.tx, w.n = nil, 0
	w.ftsDel, w.ftsIns = w.ftsDel[:0], w.ftsIns[:0]
}

// index stores a file's passages, replacing any it had.
func (w *writer) index(ctx context.Context, rel string, size, mtime int64, hash []byte, ps []passage) error {
	if err := w.begin(ctx); err != nil {
		return err
	}
	var id int64
	if err := w.upsert.QueryRowContext(ctx, rel, size, mtime, hash).Scan(&id); err != nil {
		return err
	}
	if err := w.clear(ctx, id); err != nil {
		return err
	}
	for _, p := range ps {
		res, err := w.insPassage.ExecContext(ctx, id, p.start, p.end)
		if err != nil {
			return err
		}
		pid, err := res.LastInsertId()
		if err != nil {
			return err
		}
		w.ftsIns = append(w.ftsIns, ftsRow{id: pid, title: p.title, body: p.body, path: rel})
	}
	return w.done(ctx)
}

// touchFile records a new size and mtime for a file whose content did not
// change.
func (w *writer) touchFile(ctx context.Context, id, size, mtime int64) error {
	if err := w.begin(ctx); err != nil {
		return err
	}
	if _, err := w.touch.ExecContext(ctx, size, mtime, id); err != nil {
		return err
	}
	return w.done(ctx)
}

// remove drops a file and its passages.
func (w *writer) remove(ctx context.Context, id int64) error {
	if err := w.begin(ctx); err != nil {
		return err
	}
	if err := w.clear(ctx, id); err != nil {
		return err
	}
	if _, err := w.delFile.ExecContext(ctx, id); err != nil {
		return err
	}
	return w.done(ctx)
}

// clear deletes a file's passages (queueing their FTS5 rows for deletion).
// A new file has none; the lookup is one index probe.
func (w *writer) clear(ctx context.Context, id int64) error {
	rows, err := w.oldPassages.QueryContext(ctx, id)
	if err != nil {
		return err
	}
	n := len(w.ftsDel)
	for rows.Next() {
		var pid int64
		if err := rows.Scan(&pid); err != nil {
			_ = rows.Close()
			return err
		}
		w.ftsDel = append(w.ftsDel, pid)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if len(w.ftsDel) == n {
		return nil
	}
	_, err = w.delPassages.ExecContext(ctx, id)
	return err
}
