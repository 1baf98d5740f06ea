// Package npmtest installs npm packages for tests that run third-party
// programs, such as the MCP servers published on npm, the LangGraph JS SDK
// and React.
//
// Install runs the machine's npm once per package version and machine: the
// package goes into a cache directory ($DEEPGRAPH_NPM_CACHE, else
// <user cache dir>/deepgraph/npm), under <pkg>@<version>, and later calls —
// from the same test process or another — find it there. An install is made
// in a temporary directory and renamed into place when it is complete, under
// a lock file, so concurrent test processes (go test ./... runs packages in
// parallel) neither install twice nor see half an install.
//
// Without npm or node the tests skip, saying how to run them. An install that
// fails (no network, a registry error) skips too, with npm's output — except
// under CI=true, where it fails the test: CI must not skip silently.
//
//	bin := npmtest.Bin(t, "@modelcontextprotocol/server-everything", "2026.8.31", "mcp-server-everything")
//	cmd := exec.Command("node", bin, "stdio")
//
// Modules installs several packages into one node_modules, for a script
// that needs them to resolve one another (React beside the LangGraph SDK).
package npmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvCache names the variable that moves the cache directory.
const EnvCache = "DEEPGRAPH_NPM_CACHE"

// installTimeout bounds one npm install.
const installTimeout = 10 * time.Minute

// Pinned versions of the packages the tests use.
const (
	ServerEverything        = "@modelcontextprotocol/server-everything"
	ServerEverythingVersion = "2026.8.31"
	ServerFilesystem        = "@modelcontextprotocol/server-filesystem"
	ServerFilesystemVersion = "2026.8.31"
	InspectorCLI            = "@modelcontextprotocol/inspector-cli"
	InspectorCLIVersion     = "1.0.3"
)

// installs serialises the installs of one process per cache directory; the
// lock file does the same between processes.
var installs sync.Map // cache directory -> *sync.Mutex

// Install installs pkg@version (unless it already is) and returns its
// node_modules/.bin directory, where the package's bin scripts are linked.
// It skips the test when npm or node is missing, and when the install fails
// outside CI (CI=true fails the test instead).
func Install(t testing.TB, pkg, version string) string {
	t.Helper()
	return filepath.Join(install(t, pkg, version), "node_modules", ".bin")
}

// PackageDir installs pkg@version like Install and returns the package's own
// directory (node_modules/<pkg>, with its package.json).
func PackageDir(t testing.TB, pkg, version string) string {
	t.Helper()
	return filepath.Join(install(t, pkg, version), "node_modules", filepath.FromSlash(pkg))
}

// Bin installs pkg@version like Install and returns the path of its bin
// script binName (a JavaScript file: run it with node, or directly where
// the shebang line is honoured). A package without that bin fails the test.
func Bin(t testing.TB, pkg, version, binName string) string {
	t.Helper()
	p := filepath.Join(Install(t, pkg, version), binName)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("npmtest: %s@%s has no bin %q: %v", pkg, version, binName, err)
	}
	return p
}

// Node returns the path of node, skipping the test when there is none.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: the tests that run npm packages (MCP servers, the LangGraph SDK, React) skip; install Node.js and npm to run them")
	}
	return p
}

func install(t testing.TB, pkg, version string) string {
	t.Helper()
	if err := checkName(pkg, version); err != nil {
		t.Fatalf("npmtest: %v", err)
	}
	return installSet(t, filepath.FromSlash(pkg)+"@"+version, []Package{{Name: pkg, Version: version}})
}

// Package is an npm package at an exact version.
type Package struct {
	Name, Version string
}

func (p Package) String() string { return p.Name + "@" + p.Version }

// Modules installs the packages together into one directory, so that they
// resolve one another as an application's dependencies do (React for
// @langchain/langgraph-sdk/react, an optional peer dependency npm does not
// install on its own), and returns its node_modules directory. A set is
// installed once per machine, like Install's packages, under sets/ in the
// cache; it skips and fails as Install does.
func Modules(t testing.TB, pkgs ...Package) string {
	t.Helper()
	if len(pkgs) == 0 {
		t.Fatalf("npmtest: Modules needs at least one package")
	}
	specs := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		if err := checkName(p.Name, p.Version); err != nil {
			t.Fatalf("npmtest: %v", err)
		}
		specs = append(specs, p.String())
	}
	slices.Sort(specs)
	sum := sha256.Sum256([]byte(strings.Join(specs, "\n")))
	dir := installSet(t, filepath.Join("sets", hex.EncodeToString(sum[:8])), pkgs)
	return filepath.Join(dir, "node_modules")
}

// installSet installs pkgs into the cache directory <root>/<rel> (unless
// they already are) and returns it.
func installSet(t testing.TB, rel string, pkgs []Package) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm not found: the tests that run npm packages (MCP servers, the LangGraph SDK, React) skip; install Node.js and npm to run them")
	}
	Node(t)
	root, err := cacheRoot()
	if err != nil {
		t.Fatalf("npmtest: %v", err)
	}
	dir := filepath.Join(root, rel)
	specs := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		specs = append(specs, p.String())
	}
	key := strings.Join(specs, " ")

	mu, _ := installs.LoadOrStore(dir, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()

	if installed(dir, pkgs) {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatalf("npmtest: creating the cache directory: %v", err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		t.Fatalf("npmtest: locking %s: %v", dir+".lock", err)
	}
	defer unlock()
	if installed(dir, pkgs) { // another process installed it while we waited
		return dir
	}

	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".install-")
	if err != nil {
		t.Fatalf("npmtest: %v", err)
	}
	defer os.RemoveAll(tmp) // after a successful rename there is nothing left to remove
	t.Logf("npmtest: installing %s with npm into %s", key, dir)
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	// --prefer-offline: what npm's own cache holds is not asked of the
	// registry again (an install once hung 13 minutes on a registry
	// connection with every package in the cache).
	cmd := exec.CommandContext(ctx, npm, append([]string{"install", "--no-audit", "--no-fund", "--prefer-offline", "--prefix", tmp}, specs...)...)
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		failOrSkip(t, "npm install %s failed (%v); the tests that need it cannot run:\n%s", key, err, strings.TrimSpace(out.String()))
	}
	if !installed(tmp, pkgs) {
		failOrSkip(t, "npm install %s did not install the package:\n%s", key, strings.TrimSpace(out.String()))
	}
	_ = os.RemoveAll(dir) // a broken earlier install
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatalf("npmtest: moving the install of %s into place: %v", key, err)
	}
	return dir
}

// failOrSkip fails the test under CI (which must not skip silently) and
// skips it elsewhere.
func failOrSkip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("npmtest: "+format+" (CI=true: failing instead of skipping)", args...)
	}
	t.Skipf("npmtest: "+format, args...)
}

// installed reports whether dir holds a complete install of pkgs.
func installed(dir string, pkgs []Package) bool {
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(p.Name), "package.json")); err != nil {
			return false
		}
	}
	return true
}

// CacheDir is the cache directory ($DEEPGRAPH_NPM_CACHE, else
// <user cache dir>/deepgraph/npm), for helpers that keep other npm-built
// things beside the packages (an app built from its source).
func CacheDir() (string, error) { return cacheRoot() }

// Lock takes an exclusive lock on the file path (created if need be),
// waiting for other processes to release it, as installs do; unlock
// releases it. Where there are no file locks it does nothing.
func Lock(path string) (unlock func(), err error) { return lockFile(path) }

func cacheRoot() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (%v): set %s", err, EnvCache)
	}
	return filepath.Join(d, "deepgraph", "npm"), nil
}

// checkName refuses names that could escape the cache directory or be read
// by npm as options.
func checkName(pkg, version string) error {
	bad := func(s string) bool {
		return s == "" || strings.HasPrefix(s, "-") || strings.Contains(s, "..") || strings.ContainsAny(s, "\\ \t\n")
	}
	if bad(pkg) || bad(version) || strings.Contains(version, "/") || strings.Count(pkg, "/") > 1 ||
		(strings.Contains(pkg, "/") && !strings.HasPrefix(pkg, "@")) {
		return errors.New("install " + pkg + "@" + version + ": use a package name (name or @scope/name) and an exact version")
	}
	return nil
}
