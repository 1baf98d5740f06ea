package research_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

const (
	uefa = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA"
	espn = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB"
)

// euroResearcher researches Euro 2024 with Gemini grounding against a fake
// model; the answer cites every source it was shown.
func euroResearcher(t *testing.T) (*research.Researcher, *fake.Model) {
	m := fake.New(
		queries("euro 2024 winner", "euro 2024 top scorer").Repeat(),
		grounded("euro 2024 winner", "Spain won Euro 2024.", uefa, "uefa.com").Repeat(),
		grounded("euro 2024 top scorer", "Harry Kane shared the Golden Boot.", espn, "espn.com").Repeat(),
		reflection(true, "").Repeat(),
	)
	r, err := research.New(research.Config{QueryModel: &echoModel{next: m}, Backend: research.GeminiBackend{KeepRedirects: true}, Now: fixedNow})
	require.NoError(t, err)
	return r, m
}

func TestDeepResearchTool(t *testing.T) {
	r, m := euroResearcher(t)
	tool, err := research.NewTool(r, "medium")
	require.NoError(t, err)
	assert.Equal(t, "deep_research", tool.Name())
	assert.Equal(t, []any{"low", "medium", "high"}, tool.Parameters().Properties["effort"].Enum)

	args, _ := json.Marshal(map[string]string{"question": "Who won Euro 2024?", "effort": "low"})
	res, err := tool.Run(context.Background(), args)
	require.NoError(t, err)
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "[1]("+uefa+")")
	assert.Contains(t, res.Output, "## Sources\n\n1. [uefa.com]("+uefa+")")
	assert.Equal(t, []tools.Source{{URL: uefa, Title: "uefa.com"}}, res.Sources, "low effort: one query, one source")
	var searched int
	for _, c := range m.Calls() {
		if c.Request.GoogleSearch {
			searched++
		}
	}
	assert.Equal(t, 1, searched)

	for _, bad := range []string{`{"question":"  "}`, `{"question":"q","effort":"extreme"}`} {
		col, err := tools.NewCollection(tool)
		require.NoError(t, err)
		res, err := col.Execute(context.Background(), fake.ToolCall("deep_research", json.RawMessage(bad)))
		require.NoError(t, err)
		assert.True(t, res.Failed(), bad)
	}
	_, err = research.NewTool(r, "extreme")
	assert.ErrorContains(t, err, `unknown effort "extreme"`)
}

// A flow researches a topic with the researcher, writes a file in the
// workspace with an agent, and summarises with the research's sources.
func TestFlowResearchesWritesAndSummarises(t *testing.T) {
	r, _ := euroResearcher(t)
	ws := t.TempDir()
	editor, err := tools.NewEditor(tools.EditorOptions{Workspace: ws})
	require.NoError(t, err)
	col, err := tools.NewCollection(editor)
	require.NoError(t, err)
	writerModel := fake.New(
		fake.ToolCalls(fake.ToolCall("str_replace_editor", map[string]string{
			"command": "create", "path": filepath.Join(ws, "euro.md"), "file_text": "# Euro 2024\n\nSpain won.\n"})).When(fake.Contains("Write euro.md")),
		fake.ToolCalls(terminateCall("success", "Wrote euro.md with the winner.")),
	)
	writer, err := nodes.NewAgent(nodes.AgentConfig{Model: writerModel, Tools: col})
	require.NoError(t, err)
	planner := fake.New(
		fake.ToolCalls(fake.ToolCall("planning", map[string]any{"command": "create", "title": "Euro 2024 notes",
			"steps": []string{"[researcher] Who won Euro 2024?", "[writer] Write euro.md with the findings"}})),
		fake.Text("Spain won Euro 2024 [S1]; the notes are in euro.md."),
	)
	flow, err := nodes.NewFlow(nodes.FlowConfig{Planner: planner, Default: "writer", Executors: []nodes.FlowExecutor{
		{Name: "researcher", Description: "researches a question on the web", Executor: r.Executor(research.InitialQueries(1), research.MaxLoops(1))},
		{Name: "writer", Description: "writes files in the workspace", Executor: nodes.AgentExecutor(writer)},
	}})
	require.NoError(t, err)

	var activities int
	res, err := flow.Run(context.Background(), "Write notes on who won Euro 2024", func(e nodes.FlowEvent) {
		if _, ok := e.Event.(research.Activity); ok && e.Executor == "researcher" {
			activities++
		}
	})
	require.NoError(t, err)
	assert.Equal(t, nodes.FlowCompleted, res.Status)
	assert.Positive(t, activities, "the research's timeline reached the flow's observer")
	data, err := os.ReadFile(filepath.Join(ws, "euro.md"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "Spain won.")
	assert.Contains(t, res.Steps[0].Output, "## Sources")
	// The writer saw the research step's cited result.
	assert.Contains(t, writerModel.Calls()[0].Messages[1].Content, "Answer: [1]("+uefa+")")
	assert.Equal(t, "Spain won Euro 2024 [1]("+uefa+"); the notes are in euro.md.\n\n## Sources\n\n1. [uefa.com]("+uefa+")\n", res.Summary)
	assert.True(t, strings.HasPrefix(res.Plan.Steps[0].Notes, "Answer:"), res.Plan.Steps[0].Notes)
}

func terminateCall(status, answer string) schemas.ToolCall {
	return fake.ToolCall("terminate", map[string]string{"status": status, "answer": answer})
}

// deep_research for any agent: the tool runs the deep-search graph on the
// question and returns the cited report, with its sources.
func ExampleNewTool() {
	m := fake.New(
		queries("euro 2024 winner"),
		grounded("euro 2024 winner", "Spain won Euro 2024.", uefa, "uefa.com"),
		reflection(true, ""),
		fake.Text("Spain won [uefa](https://vertexaisearch.cloud.google.com/id/0-0)."),
	)
	r, err := research.New(research.Config{QueryModel: m, Backend: research.GeminiBackend{KeepRedirects: true}, Now: fixedNow})
	if err != nil {
		panic(err)
	}
	tool, err := research.NewTool(r, "low")
	if err != nil {
		panic(err)
	}
	res, err := tool.Run(context.Background(), json.RawMessage(`{"question":"Who won Euro 2024?"}`))
	if err != nil {
		panic(err)
	}
	fmt.Print(res.Output)
	fmt.Println(res.Sources[0].URL)
	// Output:
	// Spain won [1](https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA).
	//
	// ## Sources
	//
	// 1. [uefa.com](https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA)
	// https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA
}
