//go:build unix

package agentserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

// envAgentChatUI names a checkout of github.com/langchain-ai/agent-chat-ui:
// with it, TestAgentChatUI builds the app and drives it.
const envAgentChatUI = "DEEPGRAPH_AGENT_CHAT_UI"

// The package that stands in for Google Fonts' Inter in the scratch copy:
// next build fetches the font from fonts.googleapis.com otherwise, which an
// offline build cannot.
const interFont = "@fontsource-variable/inter@5.3.0"

// wordsGraph answers the last human message word by word (messages-tuple
// chunks) and, when it asked for a review, interrupts with a question.
func wordsGraph(t testing.TB, cp graph.Checkpointer) *graph.Compiled[chatState] {
	g := graph.New[chatState](fMessages, fApproved)
	lastHuman := func(s chatState) (string, int) {
		for i := len(s.Messages) - 1; i >= 0; i-- {
			if s.Messages[i].Type == agentserver.MessageHuman {
				return s.Messages[i].Content, i
			}
		}
		return "", -1
	}
	g.AddNode("answer", func(ctx context.Context, s chatState) (graph.Update[chatState], error) {
		text, i := lastHuman(s)
		id := fmt.Sprintf("answer-%d", i)
		for _, w := range strings.SplitAfter("You said: "+text, " ") {
			graph.Emit(ctx, agentserver.MessageChunk{ID: id, Content: w})
		}
		return graph.Writes(fMessages.Merge([]agentserver.Message{{Type: agentserver.MessageAI, ID: id, Content: "You said: " + text}})), nil
	})
	g.AddNode("review", func(ctx context.Context, s chatState) (graph.Update[chatState], error) {
		if text, _ := lastHuman(s); !strings.Contains(text, "review") {
			return graph.Update[chatState]{}, nil
		}
		ans, err := graph.Interrupt[string](ctx, reviewRequest{Question: "approve the answer?"})
		if err != nil {
			return graph.Update[chatState]{}, err
		}
		return graph.Writes(fApproved.Set(ans)), nil
	})
	g.AddEdge(graph.Start, "answer")
	g.AddEdge("answer", "review")
	g.AddEdge("review", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	return run
}

// TestAgentChatUI builds LangChain's Agent Chat UI from a checkout
// ($DEEPGRAPH_AGENT_CHAT_UI; it is not on npm) in a scratch copy — npm
// install, Inter from npm in place of Google Fonts, next build — serves it
// with next start and drives it in headless Chromium against the server: a
// question is answered, a review interrupt is shown. Screenshots go to the
// test's artifact directory (go test -artifacts). It takes minutes and the
// network to npm, so it runs only when asked.
func TestAgentChatUI(t *testing.T) {
	src := os.Getenv(envAgentChatUI)
	if src == "" {
		t.Skipf("set %s to a checkout of github.com/langchain-ai/agent-chat-ui to build it and drive it in headless Chromium", envAgentChatUI)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: install Node.js and npm to run the Agent Chat UI test")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm not found: install Node.js and npm to run the Agent Chat UI test")
	}
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Skip("no Chromium or Chrome on PATH: the Agent Chat UI test drives the app in one")
	}

	app := filepath.Join(t.TempDir(), "agent-chat-ui")
	copySource(t, src, app)
	patchFont(t, filepath.Join(app, "src", "app", "layout.tsx"))
	env := append(os.Environ(), "NEXT_TELEMETRY_DISABLED=1")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	step := func(what string, name string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = app, env
		out, err := cmd.CombinedOutput()
		require.NoErrorf(t, err, "%s failed:\n%s", what, out)
	}
	step("npm install", npm, "install", "--no-audit", "--no-fund")
	step("npm install "+interFont, npm, "install", "--no-audit", "--no-fund", "--no-save", interFont)
	next := filepath.Join(app, "node_modules", "next", "dist", "bin", "next")
	step("next build", node, next, "build")

	uiPort := freePort(t)
	ui := fmt.Sprintf("http://127.0.0.1:%d", uiPort)
	cp := graph.NewMemorySaver()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp, CORSOrigins: []string{ui}, Heartbeat: time.Second})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("agent", agentserver.Compiled(wordsGraph(t, cp))))
	ts := newHTTPServer(t, srv)

	start := exec.Command(node, next, "start", "-p", fmt.Sprint(uiPort), "-H", "127.0.0.1")
	start.Dir, start.Env = app, env
	start.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // next start runs a child: stop them together
	stdout, err := start.StdoutPipe()
	require.NoError(t, err)
	start.Stderr = start.Stdout
	require.NoError(t, start.Start())
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
	case <-ctx.Done():
		t.Fatal("next start never said it was ready")
	}

	shots := t.ArtifactDir()
	runScript(t, node, "agentchatui.mjs", 5*time.Minute, "MODULES="+filepath.Join(app, "node_modules"), "CHROMIUM="+chromium, "UI="+ui,
		"API="+ts.URL, "ASSISTANT=agent", "SHOTS="+shots)
	t.Logf("screenshots in %s", shots)
}

// copySource copies the app's source, without what a build or a git
// checkout adds.
func copySource(t testing.TB, src, dst string) {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
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
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	require.NoError(t, err, "copying the Agent Chat UI checkout")
}

// patchFont makes the app's layout load Inter from the npm package instead
// of Google Fonts.
func patchFont(t testing.TB, layout string) {
	data, err := os.ReadFile(layout)
	require.NoError(t, err)
	src := string(data)
	imp := `import { Inter } from "next/font/google";`
	call := regexp.MustCompile(`(?s)Inter\(\{.*?\}\)`)
	if !strings.Contains(src, imp) || !call.MatchString(src) {
		t.Fatalf("%s no longer loads Inter from next/font/google as this test expects: update patchFont", layout)
	}
	src = strings.Replace(src, imp, `import localFont from "next/font/local";`, 1)
	src = call.ReplaceAllLiteralString(src, `localFont({ src: "../../node_modules/@fontsource-variable/inter/files/inter-latin-wght-normal.woff2", display: "swap" })`)
	require.NoError(t, os.WriteFile(layout, []byte(src), 0o644))
}

// freePort is a TCP port free on 127.0.0.1 a moment ago.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
