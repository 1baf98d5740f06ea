package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/tools"
)

// fakeBrowser stands for a browser session: it answers each call with its
// own number and the call's count, and records its Close.
type fakeBrowser struct {
	id     int
	calls  atomic.Int32
	closed chan struct{}
	once   sync.Once
}

type fakeBrowserArgs struct {
	Action string `json:"action"`
}

func (b *fakeBrowser) Name() string        { return "browser" }
func (b *fakeBrowser) Description() string { return "A fake browser." }
func (b *fakeBrowser) Parameters() *jsonschema.Schema {
	t, _ := tools.Func("browser", "x", func(context.Context, fakeBrowserArgs) (tools.Result, error) { return tools.Result{}, nil })
	return t.Parameters()
}
func (b *fakeBrowser) Run(_ context.Context, args json.RawMessage) (tools.Result, error) {
	n := b.calls.Add(1)
	return tools.Text(fmt.Sprintf("browser %d, call %d: %s\nBrowser state: …", b.id, n, args)), nil
}
func (b *fakeBrowser) Close() { b.once.Do(func() { close(b.closed) }) }

// browserFactory opens fake browsers, numbered from 1 (0 is New's probe).
type browserFactory struct {
	mu     sync.Mutex
	opened []*fakeBrowser
}

func (f *browserFactory) open() (BrowserSession, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := &fakeBrowser{id: len(f.opened), closed: make(chan struct{})}
	f.opened = append(f.opened, b)
	return b, nil
}

func (f *browserFactory) get(i int) *fakeBrowser {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened[i]
}

func (f *browserFactory) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.opened)
}

func closedWithin(t *testing.T, b *fakeBrowser, what string) {
	t.Helper()
	select {
	case <-b.closed:
	case <-time.After(30 * time.Second):
		t.Fatalf("browser %d was not closed when %s", b.id, what)
	}
}

// TestBrowserPerSession: with Options.Browser the server offers the
// browser tool (without it, TestListTools shows it is absent); each MCP
// session gets a browser of its own at its first call, kept for its later
// calls and closed when the session ends; the server's stop closes the
// rest.
func TestBrowserPerSession(t *testing.T) {
	f := &browserFactory{}
	opts := fullOptions(newSearch())
	opts.Browser = f.open
	base, stop := context.WithCancel(context.Background())
	defer stop()
	srv, err := New(base, opts)
	require.NoError(t, err)
	require.Equal(t, 1, f.count(), "New opens one browser session for the tool's description")
	closedWithin(t, f.get(0), "New had read its description")

	clients := make([]*mcp.ClientSession, 2)
	for i := range clients {
		st, ct := mcp.NewInMemoryTransports()
		_, err := srv.Connect(context.Background(), st, nil)
		require.NoError(t, err)
		clients[i], err = mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
		require.NoError(t, err)
	}
	list, err := clients[0].ListTools(context.Background(), nil)
	require.NoError(t, err)
	var browserTool *mcp.Tool
	for _, tl := range list.Tools {
		if tl.Name == "browser" {
			browserTool = tl
		}
	}
	require.NotNil(t, browserTool, "the browser tool is offered")
	assert.Equal(t, "A fake browser.", browserTool.Description)
	assert.False(t, browserTool.Annotations.ReadOnlyHint, "a browser clicks and submits: not read-only")
	assert.Contains(t, clients[0].InitializeResult().Instructions, "- browser: a real headless browser of your own for this session")

	call := func(c *mcp.ClientSession, action string) string {
		res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser", Arguments: map[string]any{"action": action}})
		require.NoError(t, err)
		require.False(t, res.IsError)
		return text(t, res)
	}
	a1 := call(clients[0], "go_to_url")
	b1 := call(clients[1], "go_to_url")
	a2 := call(clients[0], "click")
	assert.Contains(t, a1, "call 1")
	assert.Contains(t, a2, "call 2", "a session keeps its browser")
	assert.NotEqual(t, a1[:len("browser 1")], b1[:len("browser 1")], "each session has its own browser")
	assert.Equal(t, 3, f.count())

	first := f.get(1)
	if first.calls.Load() != 2 {
		first = f.get(2)
	}
	require.NoError(t, clients[0].Close())
	closedWithin(t, first, "its session ended")
	stop()
	closedWithin(t, f.get(1), "the server stopped")
	closedWithin(t, f.get(2), "the server stopped")
	_ = clients[1].Close()
}
