package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/checkpointtest"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sqliteFile creates an SQLite database at path with the statements.
func sqliteFile(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := driver.Open(path)
	require.NoError(t, err)
	defer db.Close()
	for _, stmt := range stmts {
		_, err := db.Exec(stmt)
		require.NoError(t, err, stmt)
	}
}

// TestOpenRefusesForeignFiles: Open says what is wrong with a file that is
// not a deepgraph store it can use, names it, and leaves it as it was.
func TestOpenRefusesForeignFiles(t *testing.T) {
	randomBytes := make([]byte, 8192)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range randomBytes {
		randomBytes[i] = byte(r.Uint32())
	}
	cases := []struct {
		name  string
		make  func(t *testing.T, path string)
		wants []string
	}{
		{"random bytes", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, randomBytes, 0o600))
		}, []string{"is not a deepgraph store", "not an SQLite database", "choose another path"}},
		{"text file", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("# My notes\n\nBuy milk.\n"), 0o600))
		}, []string{"is not a deepgraph store", "not an SQLite database"}},
		{"SQLite header only", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("SQLite format 3\x00"), 0o600))
		}, []string{"is not a deepgraph store", "damaged"}},
		{"database of another program", func(t *testing.T, path string) {
			sqliteFile(t, path, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", "CREATE TABLE tags (name TEXT)")
		}, []string{"another program", "notes, tags", "not a deepgraph store", "choose another path"}},
		{"database with many tables", func(t *testing.T, path string) {
			var stmts []string
			for i := range 8 {
				stmts = append(stmts, fmt.Sprintf("CREATE TABLE t%d (x)", i))
			}
			sqliteFile(t, path, stmts...)
		}, []string{"another program", "t0, t1, t2, t3, t4, …"}},
		{"another application id", func(t *testing.T, path string) {
			sqliteFile(t, path, "PRAGMA application_id = 305419896", "CREATE TABLE accounts (x)")
		}, []string{"another program", "application id is 0x12345678", "accounts", "choose another path"}},
		{"another application id, no tables", func(t *testing.T, path string) {
			sqliteFile(t, path, "PRAGMA application_id = 7")
		}, []string{"another program", "0x7", "tables: none"}},
		{"newer schema", func(t *testing.T, path string) {
			sqliteFile(t, path, fmt.Sprintf("PRAGMA application_id = %d", applicationID), "PRAGMA user_version = 99")
		}, []string{"newer version of deepgraph", "schema version 99", "upgrade deepgraph"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "store.db")
			tc.make(t, path)
			before, err := os.ReadFile(path)
			require.NoError(t, err)
			s, err := Open(t.Context(), path)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), path)
			for _, want := range tc.wants {
				assert.Contains(t, err.Error(), want)
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, before, after, "a refused file is left as it was")
		})
	}
}

// TestTruncatedStore: a store cut short is refused when opened or when the
// missing part is read, with an error that says the file is damaged.
func TestTruncatedStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	s := openAt(t, path)
	parent := ""
	for i := range 20 {
		cp := checkpoint("t", fmt.Sprintf("c%d", i), parent, i)
		cp.State = json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 8000)))
		require.NoError(t, s.Put(t.Context(), cp))
		parent = cp.ID
	}
	require.NoError(t, s.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, keep := range []int{100, 4096, len(data) / 2} {
		t.Run(fmt.Sprint(keep), func(t *testing.T) {
			cut := filepath.Join(t.TempDir(), "cut.db")
			require.NoError(t, os.WriteFile(cut, data[:keep], 0o600))
			s, err := Open(t.Context(), cut)
			if err == nil {
				defer s.Close()
				_, err = s.List(t.Context(), graph.Thread("t"), 0)
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), cut)
			assert.Contains(t, err.Error(), "damaged")
		})
	}
}

// TestReopen: what a store holds is there when it is opened again.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, s.Put(t.Context(), checkpoint("t", "c1", "", 0)))
	require.NoError(t, s.Put(t.Context(), checkpoint("t", "c2", "c1", 1)))
	require.NoError(t, s.PutWrites(t.Context(), graph.Thread("t").At("c2"), "", record(0), record(1)))
	require.NoError(t, s.Close())

	again := openAt(t, path)
	got, err := again.Get(t.Context(), graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, "c2", got.ID)
	assert.Len(t, got.Writes, 2)
	require.NoError(t, again.Put(t.Context(), checkpoint("t", "c3", "c2", 2)), "the thread goes on")
}

// TestNewStoreFiles: a new store and its directory are private to the user.
func TestNewStoreFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "store.db")
	s := openAt(t, path)
	assert.Equal(t, path, s.Path())
	require.NoError(t, s.Put(t.Context(), checkpoint("t", "c1", "", 0)))
	for name, mode := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600} {
		info, err := os.Stat(name)
		require.NoError(t, err)
		assert.Equal(t, mode, info.Mode(), name)
	}
}

// TestRelativePath: Path is absolute.
func TestRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	s := openAt(t, "runs.db")
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wd, "runs.db"), s.Path())
}

// TestOpenBadPaths: Open explains a path it cannot use.
func TestOpenBadPaths(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	cases := map[string]struct{ path, want string }{
		"empty":        {"", "not a file path"},
		"NUL":          {"a\x00b.db", "not a file path"},
		"a directory":  {dir, "creating the store"},
		"under a file": {filepath.Join(blocker, "store.db"), "creating the store"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Open(t.Context(), tc.path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestMigration: a file of our application at an older schema version —
// here 0, with no tables — is brought to the current one; an empty file
// too.
func TestMigration(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"version 0": func(t *testing.T, path string) {
			sqliteFile(t, path, fmt.Sprintf("PRAGMA application_id = %d", applicationID))
		},
		"empty file": func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, nil, 0o600))
		},
	}
	for name, prepare := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "store.db")
			prepare(t, path)
			s := openAt(t, path)
			id, err := identify(t.Context(), s.DB())
			require.NoError(t, err)
			assert.Equal(t, identity{app: applicationID, version: len(migrations()), tables: 4,
				some: "deepgraph_blobs, deepgraph_checkpoints, deepgraph_leases, deepgraph_writes"}, id)
			if name == "empty file" {
				var vacuum int
				require.NoError(t, s.DB().QueryRow("PRAGMA auto_vacuum").Scan(&vacuum))
				assert.Equal(t, 2, vacuum, "a new file gives deleted threads' space back (incremental)")
			}
			require.NoError(t, s.Put(t.Context(), checkpoint("t", "c1", "", 0)))
			var mode string
			require.NoError(t, s.DB().QueryRow("PRAGMA journal_mode").Scan(&mode))
			assert.Equal(t, "wal", mode)
		})
	}
}

// TestMigrationKeepsThreads: a file of schema version 1, with a thread an
// older deepgraph left paused at an interrupt, is migrated in place; the
// thread reads back and resumes.
func TestMigrationKeepsThreads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	stmts := []string{"PRAGMA journal_mode = WAL", schemaV1, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = 1", applicationID)}
	sqliteFile(t, path, stmts...)
	db, err := driver.Open(path)
	require.NoError(t, err)
	for _, row := range checkpointtest.LegacyThread("old") {
		_, err := db.Exec(`INSERT INTO deepgraph_checkpoints (thread, id, parent, step, source, created, data) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			"old", row.ID, row.Parent, row.Step, row.Source, row.Created, row.Doc)
		require.NoError(t, err)
		for task, rec := range row.Records {
			_, err := db.Exec(`INSERT INTO deepgraph_writes (thread, checkpoint, task, data) VALUES (?, ?, ?, ?)`, "old", row.ID, task, rec)
			require.NoError(t, err)
		}
	}
	require.NoError(t, db.Close())
	s := openAt(t, path)
	id, err := identify(t.Context(), s.DB())
	require.NoError(t, err)
	assert.Equal(t, len(migrations()), id.version)
	checkpointtest.CheckLegacyThread(t, s, "old")
}

// TestConcurrentOpens: processes that open a new file at once create its
// schema once, without failing.
func TestConcurrentOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			s, err := Open(context.Background(), path)
			if !assert.NoError(t, err) {
				return
			}
			defer s.Close()
			assert.NoError(t, s.Put(t.Context(), checkpoint(fmt.Sprint(i), "c1", "", 0)))
		})
	}
	wg.Wait()
	s := openAt(t, path)
	for i := range 8 {
		_, err := s.Get(t.Context(), graph.Thread(fmt.Sprint(i)).At("c1"))
		assert.NoError(t, err)
	}
}

// TestOpenWaitsToSetWAL: SQLite refuses at once to change the journal mode
// of a file that another connection is reading; Open tries again within the
// busy timeout.
func TestOpenWaitsToSetWAL(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hold    time.Duration
		timeout time.Duration
		want    string
	}{
		{"released in time", 100 * time.Millisecond, time.Second, ""},
		{"held too long", time.Second, 100 * time.Millisecond, "setting WAL mode: another connection or process held the file's lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "store.db")
			reader, err := driver.Open(path)
			require.NoError(t, err)
			defer reader.Close()
			tx, err := reader.BeginTx(t.Context(), nil)
			require.NoError(t, err)
			var n int
			require.NoError(t, tx.QueryRow("SELECT count(*) FROM sqlite_schema").Scan(&n), "holds a shared lock")
			release := time.AfterFunc(tc.hold, func() { _ = tx.Rollback() })
			defer release.Stop()

			s, err := Open(t.Context(), path, WithBusyTimeout(tc.timeout))
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.NoError(t, s.Close())
		})
	}
}

// TestOddPaths: a file name is taken as it is, whatever it holds.
func TestOddPaths(t *testing.T) {
	names := []string{
		"with space.db", "question?.db", "hash#frag.db", "percent%.db", "escaped%41%2F.db", "ünïcødé 東京 🦫.db",
		"a&b=c;d.db", "file:uri-like.db", "?mode=memory", "-dash.db", `back\slash.db`, "dir ?#%/nested.db",
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			s, err := Open(t.Context(), path)
			require.NoError(t, err)
			assert.Equal(t, path, s.Path())
			require.NoError(t, s.Put(t.Context(), checkpoint("t", "c1", "", 0)))
			require.NoError(t, s.Close())
			info, err := os.Stat(path)
			require.NoError(t, err, "the store is at the path given")
			assert.Greater(t, info.Size(), int64(0))
			assert.Equal(t, []string{strings.SplitN(name, "/", 2)[0]}, dirNames(t, dir), "and nowhere else")

			again := openAt(t, path)
			_, err = again.Get(t.Context(), graph.Thread("t").At("c1"))
			require.NoError(t, err)
		})
	}
}

func dirNames(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestOptions: the options reach every connection, and a wrong one is
// refused.
func TestOptions(t *testing.T) {
	cases := []struct {
		name        string
		opts        []Option
		busyMS, syn int
	}{
		{"defaults", nil, 10000, 1},
		{"full", []Option{WithSynchronous(SyncFull), WithBusyTimeout(1500 * time.Millisecond)}, 1500, 2},
		{"no waiting", []Option{WithBusyTimeout(-1)}, 0, 1},
		{"zero means default", []Option{WithBusyTimeout(0), WithSynchronous("")}, 10000, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t, tc.opts...)
			for _, db := range []*sql.DB{s.DB(), s.writer} {
				var busy, syn int
				require.NoError(t, db.QueryRow("PRAGMA busy_timeout").Scan(&busy))
				require.NoError(t, db.QueryRow("PRAGMA synchronous").Scan(&syn))
				assert.Equal(t, tc.busyMS, busy)
				assert.Equal(t, tc.syn, syn)
			}
		})
	}
	_, err := Open(t.Context(), filepath.Join(t.TempDir(), "s.db"), WithSynchronous("OFF; DROP TABLE x"))
	require.ErrorContains(t, err, "unknown synchronous level")
}

// TestOwnTables: an application keeps its tables in the store's file.
func TestOwnTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := openAt(t, path)
	_, err := s.DB().Exec("CREATE TABLE runs (id TEXT PRIMARY KEY, thread TEXT)")
	require.NoError(t, err)
	_, err = s.DB().Exec("INSERT INTO runs VALUES ('r1', 't')")
	require.NoError(t, err)
	require.NoError(t, s.Put(t.Context(), checkpoint("t", "c1", "", 0)))

	again := openAt(t, path)
	var thread string
	require.NoError(t, again.DB().QueryRow("SELECT thread FROM runs WHERE id = 'r1'").Scan(&thread))
	_, err = again.Get(t.Context(), graph.Thread(thread))
	require.NoError(t, err)
}
