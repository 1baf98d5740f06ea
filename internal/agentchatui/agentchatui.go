//go:build unix

// Package agentchatui builds LangChain's Agent Chat UI from a checkout of
// its source and drives it in headless Chromium, for the tests that check
// deepgraph's Agent Server API against the real app (agentserver's, with a
// test graph; cmd/research's, against research serve).
//
// The app is not on npm, and CI cannot fetch its source, so the tests that
// use it run only when DEEPGRAPH_AGENT_CHAT_UI names a checkout
// (git clone https://github.com/langchain-ai/agent-chat-ui); without it, or
// without node, npm or Chromium, Build skips the test, saying how to run it.
//
// Build copies the checkout, loads the Inter font from npm instead of
// Google Fonts (which an offline build cannot reach), runs npm install and
// next build, and keeps the result in the npm cache directory of package
// npmtest under the checkout's content hash: the first run takes minutes,
// later runs of the same checkout find it built. Start serves it with next
// start; Drive runs a list of steps (fill, press, click, wait for text,
// screenshot) in headless Chromium with playwright-core, the app's own
// dependency, and returns the API calls the page made with their bodies.
//
//	app := agentchatui.Build(t)
//	ui := app.Start(t)
//	calls := app.Drive(t, agentchatui.Session{API: api, Assistant: "research", Shots: dir, Steps: steps})
package agentchatui

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deepgraph/deepgraph/internal/npmtest"
)

// EnvCheckout names a checkout of github.com/langchain-ai/agent-chat-ui.
const EnvCheckout = "DEEPGRAPH_AGENT_CHAT_UI"

// interFont is the package that stands in for Google Fonts' Inter.
const interFont = "@fontsource-variable/inter@5.3.0"

// recipe changes when the way the app is built changes, so that a cached
// build of the old recipe is not used.
const recipe = "agent-chat-ui build 1: npm install, " + interFont + ", next build"

// buildTimeout bounds the install and the build.
const buildTimeout = 20 * time.Minute

//go:embed drive.mjs
var driveScript []byte

// App is a built Agent Chat UI.
type App struct {
	// Dir holds the built app (its node_modules and .next).
	Dir string
	// Node and Chromium are the executables that run it and drive it.
	Node, Chromium string
	// URL is where Start serves it ("" before).
	URL string
}

// Build builds the app from the checkout $DEEPGRAPH_AGENT_CHAT_UI, or
// finds it built; it skips the test without the checkout, node, npm or
// Chromium, and fails it when the install or the build fails.
func Build(t testing.TB) *App {
	t.Helper()
	src := os.Getenv(EnvCheckout)
	if src == "" {
		t.Skipf("set %s to a checkout of github.com/langchain-ai/agent-chat-ui (git clone https://github.com/langchain-ai/agent-chat-ui) to build the app and drive it in headless Chromium; CI cannot fetch it", EnvCheckout)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: install Node.js and npm to run the Agent Chat UI tests")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm not found: install Node.js and npm to run the Agent Chat UI tests")
	}
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Skip("no Chromium or Chrome on PATH: the Agent Chat UI tests drive the app in one")
	}
	src, err = filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sourceHash(src)
	if err != nil {
		t.Fatalf("%s=%s: reading the checkout: %v", EnvCheckout, src, err)
	}
	root, err := npmtest.CacheDir()
	if err != nil {
		t.Fatalf("agentchatui: %v", err)
	}
	dir := filepath.Join(root, "agent-chat-ui", sum)
	app := &App{Dir: filepath.Join(dir, "app"), Node: node, Chromium: chromium}
	built := filepath.Join(dir, "built")
	if _, err := os.Stat(built); err == nil {
		return app
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("agentchatui: %v", err)
	}
	unlock, err := npmtest.Lock(dir + ".lock")
	if err != nil {
		t.Fatalf("agentchatui: locking %s: %v", dir+".lock", err)
	}
	defer unlock()
	if _, err := os.Stat(built); err == nil { // another process built it while we waited
		return app
	}
	// The build runs in place: next build writes absolute paths into .next.
	if err := os.RemoveAll(app.Dir); err != nil {
		t.Fatalf("agentchatui: removing a broken build: %v", err)
	}
	t.Logf("agentchatui: building Agent Chat UI from %s into %s (npm install and next build take minutes; later runs reuse it)", src, app.Dir)
	if err := copySource(src, app.Dir); err != nil {
		t.Fatalf("agentchatui: copying the checkout %s: %v", src, err)
	}
	if err := patchFont(filepath.Join(app.Dir, "src", "app", "layout.tsx")); err != nil {
		t.Fatalf("agentchatui: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	for _, step := range [][]string{
		// --prefer-offline: what npm's cache has is not fetched again (a
		// registry connection that stalls has held an install for minutes).
		{npm, "install", "--no-audit", "--no-fund", "--prefer-offline"},
		{npm, "install", "--no-audit", "--no-fund", "--prefer-offline", "--no-save", interFont},
		{node, filepath.Join("node_modules", "next", "dist", "bin", "next"), "build"},
	} {
		cmd := exec.CommandContext(ctx, step[0], step[1:]...)
		cmd.Dir, cmd.Env = app.Dir, append(os.Environ(), "NEXT_TELEMETRY_DISABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("agentchatui: %s failed (%v):\n%s", strings.Join(step[1:], " "), err, out)
		}
	}
	if err := os.WriteFile(built, []byte(recipe+"\n"), 0o644); err != nil {
		t.Fatalf("agentchatui: %v", err)
	}
	return app
}

// ShotsDir is where a test's screenshots go: $DEEPGRAPH_ARTIFACTS
// (created when needed), where the project's other browser tests keep
// theirs, else the test's artifact directory (go test -artifacts).
func ShotsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("DEEPGRAPH_ARTIFACTS")
	if dir == "" {
		return t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("agentchatui: DEEPGRAPH_ARTIFACTS: %v", err)
	}
	return dir
}

// Start serves the app with next start on a free loopback port until the
// test ends, and returns its URL (also in a.URL). Its output goes to the
// test's log.
func (a *App) Start(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	start := exec.Command(a.Node, filepath.Join("node_modules", "next", "dist", "bin", "next"), "start", "-p", fmt.Sprint(port), "-H", "127.0.0.1")
	start.Dir, start.Env = a.Dir, append(os.Environ(), "NEXT_TELEMETRY_DISABLED=1")
	start.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // next start runs a child: stop them together
	stdout, err := start.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start.Stderr = start.Stdout
	if err := start.Start(); err != nil {
		t.Fatalf("agentchatui: next start: %v", err)
	}
	ready, read := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() {
		_ = syscall.Kill(-start.Process.Pid, syscall.SIGKILL)
		<-read // the output ends with the processes
		_ = start.Wait()
	})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		said := false
		for sc.Scan() {
			t.Logf("next start: %s", sc.Text())
			if !said && strings.Contains(sc.Text(), "Ready") {
				said = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-ready:
	case <-read:
		t.Fatal("agentchatui: next start ended before it was ready (its output is above)")
	case <-time.After(2 * time.Minute):
		t.Fatal("agentchatui: next start did not say it was ready within 2 minutes")
	}
	a.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	return a.URL
}

// Step is one thing Drive does in the page, in order: exactly one of Fill,
// Press, Click, See, Wait, Scroll or Shot. Selectors are Playwright's (CSS with
// :has-text, :text-is, :has; or text=, role=).
type Step struct {
	// What the step is for, in failure messages.
	What string `json:"what"`
	// Fill types Text into the element Fill selects, replacing its value.
	Fill string `json:"fill,omitempty"`
	Text string `json:"text,omitempty"`
	// Press presses Key ("Enter") in the element Press selects.
	Press string `json:"press,omitempty"`
	Key   string `json:"key,omitempty"`
	// Click clicks the element Click selects.
	Click string `json:"click,omitempty"`
	// See waits for the text to show in the page.
	See string `json:"see,omitempty"`
	// Wait waits for the element it selects to be visible.
	Wait string `json:"wait,omitempty"`
	// Scroll scrolls the element it selects to the top of its view (for
	// the screenshot that follows).
	Scroll string `json:"scroll,omitempty"`
	// Shot saves a screenshot of the page as the file Shot in
	// Session.Shots.
	Shot string `json:"shot,omitempty"`
	// Timeout bounds a wait, a fill, a press or a click (default 60s).
	Timeout time.Duration `json:"-"`
}

// Session is what Drive does: open the app pointed at API and Assistant
// (its apiUrl and assistantId query parameters) and do Steps.
type Session struct {
	API, Assistant string
	// Shots is the directory of the screenshots (a failure's is
	// failure.png).
	Shots string
	Steps []Step
	// Limit bounds the whole session (default 5 minutes).
	Limit time.Duration
}

// Call is a request the page made to the API.
type Call struct {
	Method string
	Path   string
	// Body is the request's JSON body (nil when it had none or it was not
	// JSON).
	Body json.RawMessage
}

func (c Call) String() string { return c.Method + " " + c.Path }

// Result is what a session left: the API calls the page made, in order,
// and the page's text at the end.
type Result struct {
	Calls []Call
	Text  string
}

// Drive runs the session in headless Chromium against the app (started),
// failing the test at the first step that does not happen, with the page's
// text, the API calls made so far and the browser console's errors.
func (a *App) Drive(t testing.TB, s Session) Result {
	t.Helper()
	if a.URL == "" {
		t.Fatal("agentchatui: Drive before Start")
	}
	if s.Limit == 0 {
		s.Limit = 5 * time.Minute
	}
	type jsStep struct {
		Step
		TimeoutMS int64 `json:"timeout_ms"`
	}
	steps := make([]jsStep, len(s.Steps))
	for i, st := range s.Steps {
		if st.Timeout == 0 {
			st.Timeout = time.Minute
		}
		steps[i] = jsStep{Step: st, TimeoutMS: st.Timeout.Milliseconds()}
	}
	data, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "drive.mjs")
	if err := os.WriteFile(script, driveScript, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "result.json")
	ctx, cancel := context.WithTimeout(context.Background(), s.Limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.Node, script)
	cmd.Env = append(os.Environ(), "LANGGRAPH_API_KEY=", "LANGSMITH_API_KEY=", "LANGCHAIN_API_KEY=",
		"MODULES="+filepath.Join(a.Dir, "node_modules"), "CHROMIUM="+a.Chromium, "UI="+a.URL, "API="+s.API,
		"ASSISTANT="+s.Assistant, "SHOTS="+s.Shots, "STEPS="+string(data), "RESULT="+out)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	err = cmd.Run()
	t.Logf("agentchatui: the session in Chromium:\n%s", log.String())
	if err != nil {
		t.Fatalf("agentchatui: the session failed (%v): see its log above and %s", err, filepath.Join(s.Shots, "failure.png"))
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("agentchatui: the session left no result: %v", err)
	}
	var res struct {
		Calls []struct {
			Method string `json:"method"`
			Path   string `json:"path"`
			Body   string `json:"body"`
		} `json:"calls"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("agentchatui: reading the session's result: %v", err)
	}
	r := Result{Text: res.Text}
	for _, c := range res.Calls {
		call := Call{Method: c.Method, Path: c.Path}
		if json.Valid([]byte(c.Body)) {
			call.Body = json.RawMessage(c.Body)
		}
		r.Calls = append(r.Calls, call)
	}
	return r
}

// sourceHash is a hash of the checkout's files (not what a build or git
// adds) and of the recipe.
func sourceHash(src string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, recipe)
	var files []string
	err := walkSource(src, func(rel string, _ fs.DirEntry) error {
		files = append(files, rel)
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// walkSource calls fn for each regular file of the checkout src, by its
// path within it, leaving out .git, node_modules and .next.
func walkSource(src string, fn func(rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == ".next"):
			return filepath.SkipDir
		case d.IsDir() || !d.Type().IsRegular():
			return nil
		}
		return fn(rel, d)
	})
}

// copySource copies the checkout's files into dst.
func copySource(src, dst string) error {
	return walkSource(src, func(rel string, _ fs.DirEntry) error {
		data, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}

// patchFont makes the app's layout load Inter from the npm package instead
// of Google Fonts.
func patchFont(layout string) error {
	data, err := os.ReadFile(layout)
	if err != nil {
		return err
	}
	src := string(data)
	imp := `import { Inter } from "next/font/google";`
	call := regexp.MustCompile(`(?s)Inter\(\{.*?\}\)`)
	if !strings.Contains(src, imp) || !call.MatchString(src) {
		return fmt.Errorf("%s no longer loads Inter from next/font/google as this package expects: update patchFont", layout)
	}
	src = strings.Replace(src, imp, `import localFont from "next/font/local";`, 1)
	src = call.ReplaceAllLiteralString(src, `localFont({ src: "../../node_modules/@fontsource-variable/inter/files/inter-latin-wght-normal.woff2", display: "swap" })`)
	return os.WriteFile(layout, []byte(src), 0o644)
}
