//go:build unix

package agentserver_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/agentchatui"
)

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

// TestAgentChatUI drives LangChain's Agent Chat UI, built from a checkout
// ($DEEPGRAPH_AGENT_CHAT_UI; package internal/agentchatui), in headless
// Chromium against a server of a test graph: a question is answered word
// by word (messages-tuple chunks), a question that asks for a review shows
// the interrupt, whose value is not a HITLRequest, in the UI's generic
// view. Screenshots go to $DEEPGRAPH_ARTIFACTS, else the test's artifact
// directory (go test -artifacts). cmd/research's TestE2EAgentChatUI answers research serve's
// review through the UI.
func TestAgentChatUI(t *testing.T) {
	app := agentchatui.Build(t)
	ui := app.Start(t)
	cp := graph.NewMemorySaver()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp, CORSOrigins: []string{ui}, Heartbeat: time.Second})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("agent", agentserver.Compiled(wordsGraph(t, cp))))
	ts := newHTTPServer(t, srv)

	shots := agentchatui.ShotsDir(t)
	const chat = `textarea[placeholder="Type your message..."]`
	res := app.Drive(t, agentchatui.Session{API: ts.URL, Assistant: "agent", Shots: shots, Steps: []agentchatui.Step{
		{What: "the chat box shows (not the setup form)", Wait: chat},
		{What: "a question is typed", Fill: chat, Text: "hello from headless chromium"},
		{What: "and sent", Press: chat, Key: "Enter"},
		{What: "the streamed answer is in the page", See: "You said: hello from headless chromium"},
		{Shot: "agent-chat-ui-answer.png"},
		{What: "a question that asks for a review", Fill: chat, Text: "please review this"},
		{What: "is sent", Press: chat, Key: "Enter"},
		{What: "its answer is in the page", See: "You said: please review this"},
		{What: "the interrupt is shown", See: "approve the answer?"},
		{Shot: "agent-chat-ui-interrupt.png"},
	}})
	var calls []string
	for _, c := range res.Calls {
		calls = append(calls, c.String())
	}
	for _, want := range []string{"GET /info", "POST /threads", "POST /threads/search"} {
		assert.Contains(t, calls, want)
	}
	for _, want := range []*regexp.Regexp{regexp.MustCompile(`^POST /threads/[^/]+/runs/stream$`), regexp.MustCompile(`^POST /threads/[^/]+/history$`)} {
		assert.True(t, slices.ContainsFunc(calls, want.MatchString), "the page never called %s: %v", want, calls)
	}
	t.Logf("screenshots in %s", shots)
}
