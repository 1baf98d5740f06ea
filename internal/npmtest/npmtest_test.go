package npmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTB records what a helper did with the test: a Skip or a Fatal ends
// the goroutine, as with a real test.
type fakeTB struct {
	testing.TB
	mu      sync.Mutex
	skipped string
	failed  string
}

func (f *fakeTB) Helper()             {}
func (f *fakeTB) Logf(string, ...any) {}
func (f *fakeTB) Skip(args ...any) {
	f.mu.Lock()
	f.skipped = fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) { f.Skip(fmt.Sprintf(format, args...)) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// run calls fn with a fakeTB in its own goroutine and returns the fake and
// what fn returned.
func run(t *testing.T, fn func(testing.TB) string) (*fakeTB, string) {
	f := &fakeTB{TB: t}
	var out string
	done := make(chan struct{})
	go func() {
		defer close(done)
		out = fn(f)
	}()
	<-done
	return f, out
}

// fakeNPM puts an npm and a node on PATH. The npm installs a package with a
// bin script "hello" the way npm lays it out, and counts its runs in the
// file it returns; fail makes it fail instead.
func fakeNPM(t *testing.T, fail bool) (count string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake npm is a shell script")
	}
	bin := t.TempDir()
	count = filepath.Join(t.TempDir(), "count")
	script := `#!/bin/sh
echo run >> "` + count + `"
[ "$1" = install ] || exit 2
prefix= specs=
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift ;;
    --*) ;;
    install) ;;
    *) specs="$specs $1" ;;
  esac
  shift
done
`
	if fail {
		script += "echo 'npm error 404 Not Found - GET https://registry.example/nope' >&2\nexit 1\n"
	} else {
		script += `for spec in $specs; do
pkg=${spec%@*}
mkdir -p "$prefix/node_modules/$pkg" "$prefix/node_modules/.bin"
echo '{"name":"'"$pkg"'"}' > "$prefix/node_modules/$pkg/package.json"
echo 'console.log("hello")' > "$prefix/node_modules/.bin/hello"
done
`
	}
	require.NoError(t, os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "node"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+"/usr/bin"+string(os.PathListSeparator)+"/bin") // ours first
	return count
}

func runs(t *testing.T, count string) int {
	b, err := os.ReadFile(count)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "run\n")
}

func TestInstallOncePerMachine(t *testing.T) {
	count := fakeNPM(t, false)
	cache := t.TempDir()
	t.Setenv(EnvCache, cache)
	t.Setenv("CI", "")

	// Several tests of one process ask at once: one install.
	var wg sync.WaitGroup
	dirs := make([]string, 4)
	for i := range dirs {
		wg.Go(func() {
			f, dir := run(t, func(tb testing.TB) string { return Install(tb, "@scope/pkg", "1.2.3") })
			assert.Empty(t, f.skipped+f.failed)
			dirs[i] = dir
		})
	}
	wg.Wait()
	want := filepath.Join(cache, "@scope", "pkg@1.2.3", "node_modules", ".bin")
	for _, d := range dirs {
		assert.Equal(t, want, d)
	}
	assert.Equal(t, 1, runs(t, count))

	// Another version is another install; the first stays cached.
	f, bin := run(t, func(tb testing.TB) string { return Bin(tb, "@scope/pkg", "2.0.0", "hello") })
	assert.Empty(t, f.skipped+f.failed)
	assert.Equal(t, filepath.Join(cache, "@scope", "pkg@2.0.0", "node_modules", ".bin", "hello"), bin)
	f, dir := run(t, func(tb testing.TB) string { return PackageDir(tb, "@scope/pkg", "1.2.3") })
	assert.Empty(t, f.skipped+f.failed)
	assert.FileExists(t, filepath.Join(dir, "package.json"))
	assert.Equal(t, 2, runs(t, count))

	// No temporary directory is left behind.
	entries, err := os.ReadDir(filepath.Join(cache, "@scope"))
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), ".install-"), e.Name())
	}

	// A missing bin fails the test, naming it.
	f, _ = run(t, func(tb testing.TB) string { return Bin(tb, "@scope/pkg", "1.2.3", "nope") })
	assert.Contains(t, f.failed, `has no bin "nope"`)
}

func TestModulesInstallsASetOnce(t *testing.T) {
	count := fakeNPM(t, false)
	cache := t.TempDir()
	t.Setenv(EnvCache, cache)
	t.Setenv("CI", "")

	set := []Package{{Name: "@scope/lib", Version: "1.0.0"}, {Name: "peer", Version: "19.0.0"}}
	f, mods := run(t, func(tb testing.TB) string { return Modules(tb, set...) })
	require.Empty(t, f.skipped+f.failed)
	assert.FileExists(t, filepath.Join(mods, "@scope", "lib", "package.json"))
	assert.FileExists(t, filepath.Join(mods, "peer", "package.json"), "both packages are in one node_modules")
	assert.Equal(t, filepath.Join(cache, "sets"), filepath.Dir(filepath.Dir(mods)))

	// The same set in another order is the same install.
	f, again := run(t, func(tb testing.TB) string { return Modules(tb, set[1], set[0]) })
	require.Empty(t, f.skipped+f.failed)
	assert.Equal(t, mods, again)
	assert.Equal(t, 1, runs(t, count))

	// Another version is another set.
	f, other := run(t, func(tb testing.TB) string { return Modules(tb, set[0], Package{Name: "peer", Version: "18.0.0"}) })
	require.Empty(t, f.skipped+f.failed)
	assert.NotEqual(t, mods, other)
	assert.Equal(t, 2, runs(t, count))

	// A bad name fails, naming it.
	f, _ = run(t, func(tb testing.TB) string { return Modules(tb, Package{Name: "--global", Version: "1"}) })
	assert.Contains(t, f.failed, "--global@1")
}

func TestInstallFailure(t *testing.T) {
	fakeNPM(t, true)
	t.Setenv(EnvCache, t.TempDir())

	t.Setenv("CI", "")
	f, _ := run(t, func(tb testing.TB) string { return Install(tb, "pkg", "1.0.0") })
	assert.Empty(t, f.failed)
	assert.Contains(t, f.skipped, "npm install pkg@1.0.0 failed")
	assert.Contains(t, f.skipped, "404 Not Found", "npm's output explains the failure")

	t.Setenv("CI", "true")
	f, _ = run(t, func(tb testing.TB) string { return Install(tb, "pkg", "1.0.0") })
	assert.Empty(t, f.skipped, "CI must not skip")
	assert.Contains(t, f.failed, "404 Not Found")
	assert.Contains(t, f.failed, "CI=true")
}

func TestInstallWithoutNPM(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvCache, t.TempDir())
	f, _ := run(t, func(tb testing.TB) string { return Install(tb, "pkg", "1.0.0") })
	assert.Equal(t, "npm not found: the tests that run npm packages (MCP servers, the LangGraph SDK, React) skip; install Node.js and npm to run them", f.skipped)
}

func TestInstallRefusesOddNames(t *testing.T) {
	for _, c := range [][2]string{{"--global", "1"}, {"../x", "1"}, {"a/b", "1"}, {"@s/a/b", "1"}, {"pkg", "1 2"}, {"pkg", ""}, {"pkg", "../1"}} {
		assert.Error(t, checkName(c[0], c[1]), c)
	}
	for _, c := range [][2]string{{"pkg", "1.0.0"}, {"@modelcontextprotocol/server-everything", "2026.8.31"}} {
		assert.NoError(t, checkName(c[0], c[1]), c)
	}
}
