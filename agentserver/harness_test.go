package agentserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

// chatState is the test graph's state: a conversation, and whether a
// person approved the draft.
type chatState struct {
	Messages []agentserver.Message `json:"messages"`
	Review   bool                  `json:"review"`
	Approved string                `json:"approved"`
	Drafts   int                   `json:"drafts"`
}

var (
	fMessages = graph.Reduce(func(s *chatState) *[]agentserver.Message { return &s.Messages }, agentserver.AddMessages)
	fReview   = graph.Value(func(s *chatState) *bool { return &s.Review })
	fApproved = graph.Value(func(s *chatState) *string { return &s.Approved })
	fDrafts   = graph.Value(func(s *chatState) *int { return &s.Drafts })
)

// reviewRequest is what the review node asks.
type reviewRequest struct {
	Question string `json:"question"`
	Draft    string `json:"draft"`
}

// gate, when set, makes draft wait for it (or for its context): tests of
// busy threads hold a run with it.
type gate chan struct{}

// chatGraph answers the last human message in two streamed pieces ("You
// said: " and the text), emitting an activity; with review set, a person
// approves the answer (an interrupt) before it ends.
func chatGraph(t testing.TB, cp graph.Checkpointer, hold gate) *graph.Compiled[chatState] {
	return gatedChatGraph(t, cp, hold, nil)
}

// gatedChatGraph is chatGraph whose answer, when between is set, waits
// for it (or its context) after its first piece: a client can be seen
// showing a partial answer while the run goes on.
func gatedChatGraph(t testing.TB, cp graph.Checkpointer, hold, between gate) *graph.Compiled[chatState] {
	g := graph.New[chatState](fMessages, fReview, fApproved, fDrafts)
	g.AddNode("draft", func(ctx context.Context, s chatState) (graph.Update[chatState], error) {
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
				return graph.Update[chatState]{}, ctx.Err()
			}
		}
		var last string
		for _, m := range s.Messages {
			if m.Type == agentserver.MessageHuman {
				last = m.Content
			}
		}
		id := fmt.Sprintf("answer-%d", len(s.Messages))
		graph.Emit(ctx, map[string]string{"activity": "drafting"})
		graph.Emit(ctx, agentserver.MessageChunk{ID: id, Content: "You said: "})
		if between != nil {
			select {
			case <-between:
			case <-ctx.Done():
				return graph.Update[chatState]{}, ctx.Err()
			}
		}
		graph.Emit(ctx, agentserver.MessageChunk{ID: id, Content: last})
		return graph.Writes(fMessages.Merge([]agentserver.Message{{Type: agentserver.MessageAI, ID: id, Content: "You said: " + last}}),
			fDrafts.Set(s.Drafts+1)), nil
	})
	g.AddNode("review", func(ctx context.Context, s chatState) (graph.Update[chatState], error) {
		if !s.Review {
			return graph.Update[chatState]{}, nil
		}
		ans, err := graph.Interrupt[string](ctx, reviewRequest{Question: "approve the answer?", Draft: s.Messages[len(s.Messages)-1].Content})
		if err != nil {
			return graph.Update[chatState]{}, err
		}
		return graph.Writes(fApproved.Set(ans)), nil
	})
	g.AddEdge(graph.Start, "draft")
	g.AddEdge("draft", "review")
	g.AddEdge("review", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	return run
}

// newServer serves the chat graph as "chat" on an httptest server.
func newServer(t testing.TB, opts agentserver.Options, hold gate) (*agentserver.Server, *httptest.Server) {
	t.Helper()
	cp := graph.NewMemorySaver()
	opts.Checkpointer = cp
	opts.Heartbeat = time.Hour // tests read no heartbeats but the one they ask for
	srv, err := agentserver.New(opts)
	require.NoError(t, err)
	require.NoError(t, srv.Serve("chat", agentserver.Compiled(chatGraph(t, cp, hold), agentserver.Description[chatState]("echoes, with an optional review"))))
	return srv, newHTTPServer(t, srv)
}

// newHTTPServer serves srv until the test ends, then shuts it down.
func newHTTPServer(t testing.TB, srv *agentserver.Server) *httptest.Server {
	return serveHTTP(t, srv, srv.Handler())
}

// serveHTTP serves h — srv's handler, wrapped by the test — until the
// test ends, then shuts srv down.
func serveHTTP(t testing.TB, srv *agentserver.Server, h http.Handler) *httptest.Server {
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
	})
	return ts
}

// runScript runs node on the script testdata/name with env added (and
// none of the caller's LangGraph or LangSmith keys) within limit, and
// requires it to end with every check passed.
func runScript(t testing.TB, node, name string, limit time.Duration, env ...string) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", name))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(append(cmd.Environ(), "LANGGRAPH_API_KEY=", "LANGSMITH_API_KEY=", "LANGCHAIN_API_KEY="), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "the script %s failed", name)
	require.Contains(t, string(out), "OK all checks passed")
}

// client calls the test server.
type client struct {
	t    testing.TB
	base string
	hdr  http.Header
}

func (c client) do(method, path string, body any) *http.Response {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	require.NoError(c.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	return resp
}

// json calls the server and decodes its answer into out, checking the
// status.
func (c client) json(method, path string, body any, status int, out any) *http.Response {
	c.t.Helper()
	resp := c.do(method, path, body)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	require.Equalf(c.t, status, resp.StatusCode, "%s %s: %s", method, path, data)
	if out != nil {
		require.NoErrorf(c.t, json.Unmarshal(data, out), "%s %s: %s", method, path, data)
	}
	return resp
}

// event is one Server-Sent Event.
type event struct {
	ID, Event string
	Data      json.RawMessage
}

// readSSE reads a whole stream.
func readSSE(t testing.TB, r io.Reader) []event {
	t.Helper()
	var out []event
	var cur event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" {
				out = append(out, cur)
			}
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
			require.Truef(t, json.Valid(cur.Data), "data is not JSON: %s", line)
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		require.NoError(t, err)
	}
	return out
}

func ofType(evs []event, name string) []event {
	var out []event
	for _, e := range evs {
		if e.Event == name {
			out = append(out, e)
		}
	}
	return out
}

func human(text string) map[string]any {
	return map[string]any{"messages": []map[string]any{{"type": "human", "content": text}}}
}
