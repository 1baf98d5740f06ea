package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Where the report goes is checked before anything is paid for.
func TestE2EOutIsCheckedFirst(t *testing.T) {
	t.Parallel()
	oa, _, _, vars := searchSetup(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", filepath.Join(dir, "nonexistent", "x.md"), "Raft?"},
			"--out " + filepath.Join(dir, "nonexistent", "x.md") + ": the directory " + filepath.Join(dir, "nonexistent") + " does not exist"},
		{[]string{"--out", dir, "Raft?"}, "--out " + dir + " is a directory: give a file name"},
		{[]string{"agent", "--out", filepath.Join(dir, "nope", "a.md"), "a task"}, "the directory " + filepath.Join(dir, "nope") + " does not exist"},
	} {
		res := run(t, env(t, vars), append([]string{"--model", "openai:gpt-4.1-mini"}, tc.args...)...)
		assert.Equal(t, exitUsage, res.code, res)
		assert.Contains(t, res.stderr, tc.want)
		assert.Empty(t, res.stdout)
	}
	assert.Zero(t, oa.count(), "no model call before the output is known to be writable")

	// A writable file is written.
	out := filepath.Join(dir, "report.md")
	res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--effort", "low", "--out", out, "Raft?")
	require.Equal(t, 0, res.code, res)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(data), "## Sources")
}

// A late write failure says where the report is kept.
func TestOutputSaysWhereTheReportIsKept(t *testing.T) {
	t.Parallel()
	c := newCLI(strings.NewReader(""), &strings.Builder{}, &strings.Builder{})
	c.out = filepath.Join(t.TempDir(), "gone", "report.md")
	c.runID = "k3f9x2mq"
	err := c.output("# report\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "writing the report to "+c.out)
	assert.Contains(t, err.Error(), "the run is kept: research show k3f9x2mq prints its report")
}

// The JSON document names its run and thread: research show, resume and
// --thread take them; a run not kept has neither.
func TestE2EJSONNamesItsRun(t *testing.T) {
	t.Parallel()
	_, _, _, vars := searchSetup(t)
	envv := env(t, vars)
	res := run(t, envv, "--model", "openai:gpt-4.1-mini", "--effort", "low", "--format", "json", "Raft?")
	require.Equal(t, 0, res.code, res)
	var doc struct {
		RunID    string `json:"run_id"`
		ThreadID string `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res.stdout)
	assert.Equal(t, runIDOf(t, res.stderr), doc.RunID)
	assert.NotEmpty(t, doc.ThreadID)

	shown := run(t, envv, "show", doc.RunID, "--format", "json")
	require.Equal(t, 0, shown.code, shown)
	assert.JSONEq(t, res.stdout, shown.stdout, "the stored document is the one printed")

	followUp := run(t, envv, "--model", "openai:gpt-4.1-mini", "--effort", "low", "--format", "json", "--thread", doc.RunID, "And Paxos?")
	require.Equal(t, 0, followUp.code, followUp)
	var next struct {
		RunID    string `json:"run_id"`
		ThreadID string `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(followUp.stdout), &next))
	assert.NotEqual(t, doc.RunID, next.RunID)
	assert.Equal(t, doc.ThreadID, next.ThreadID, "a follow-up is on its run's thread")

	unsaved := run(t, envv, "--model", "openai:gpt-4.1-mini", "--effort", "low", "--format", "json", "--no-save", "Raft?")
	require.Equal(t, 0, unsaved.code, unsaved)
	assert.NotContains(t, unsaved.stdout, `"run_id"`, "a run not kept has no id")
}

// A review stopped before any search: the answer cites nothing, and the
// run says so — on the timeline, in the summary and with exit 7 — after
// printing it.
func TestE2EStoppedReviewCitesNothing(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, nil)
	res := run(t, envv, "--review", "--format", "json", "Wer gewann die Euro 2024?")
	require.Equal(t, exitNeedsInput, res.code, res)
	id := runIDOf(t, res.stderr)
	assert.Regexp(t, `Paused for review in \S+ · [\d,]+ tokens · 1 LLM call · 0 sources gathered so far`, res.stderr)
	var paused struct {
		RunID      string `json:"run_id"`
		Incomplete bool   `json:"incomplete"`
		Error      string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &paused), "a paused run's document, for scripts: %s", res)
	assert.Equal(t, id, paused.RunID)
	assert.True(t, paused.Incomplete)
	assert.Equal(t, "waits for an answer", paused.Error)

	res = run(t, envv, "resume", id, "--answer", "stop")
	require.Equal(t, exitNoSources, res.code, res)
	assert.Contains(t, res.stdout, "nichts gefunden", "the answer is printed")
	assert.Contains(t, res.stderr, "No queries to search: the answer is written from what was gathered")
	assert.NotContains(t, res.stderr, "Queries: \n")
	assert.Contains(t, res.stderr, "Answer: no source cited, ")
	assert.Regexp(t, `Done in \S+ · [\d,]+ tokens · 2 LLM calls · no source cited · 0 citations dropped · \$\S+ · resumed \(the run began \d+s ago\)`, res.stderr)
	assert.Contains(t, res.stderr, "research: the answer above cites no source: nothing was gathered")
	assert.NotContains(t, res.stderr, "0 sources cited")
	runs := run(t, envv, "runs")
	assert.Regexp(t, id+`.*done`, runs.stdout, "the run is done; its exit status says it cites nothing")
}

// A warning — a search provider that failed over to the next — is one
// readable timeline line, not slog's key=value text.
func TestE2EWarningsAreTimelineLines(t *testing.T) {
	t.Parallel()
	_, _, _, vars := searchSetup(t)
	vars["DEEPGRAPH_SEARCH"] = "tavily,searxng"
	vars["TAVILY_API_KEY"] = tavilyKey
	vars["DEEPGRAPH_TAVILY_BASE_URL"] = "http://127.0.0.1:1"
	res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--effort", "low", "--retries", "0", "Raft?")
	require.Equal(t, 0, res.code, res)
	line := regexp.MustCompile(`(?m)^\[\s*\d+\.\ds\s+\S+ tok\] Warning: search: provider failed, trying the next \(provider: tavily, next: searxng\): tavily: .*connection refused$`)
	assert.Len(t, line.FindAllString(res.stderr, -1), 1, "one line, said once:\n%s", res.stderr)
	for _, soup := range []string{"level=WARN", "msg=", "time=", tavilyKey} {
		assert.NotContains(t, res.stderr, soup)
	}
}

// Errors name what to do and no internal package; unknown flags suggest
// the near ones.
func TestE2EErrorsSpeakToPeople(t *testing.T) {
	t.Parallel()
	envv := env(t, nil)
	res := run(t, envv, "show", "nosuch")
	require.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, `research: no such run: no run has an id that is or starts with "nosuch"`)
	assert.Contains(t, res.stderr, "research runs lists the runs kept there")
	assert.NotContains(t, res.stderr, "runstore")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--loop", "2", "q?"}, "unknown flag: --loop: did you mean --loops? (see research --help)"},
		{[]string{"show", "--fromat", "json", "x"}, "unknown flag: --fromat: did you mean --format? (see research show --help)"},
		{[]string{"agent", "--max-step", "3", "x"}, "unknown flag: --max-step: did you mean --max-steps?"},
	} {
		res := run(t, envv, tc.args...)
		assert.Equal(t, exitUsage, res.code, res)
		assert.Contains(t, res.stderr, tc.want)
	}
}

// Each command's help lists the flags it reads, the global ones on one
// line; research help flags lists them all; --version and completion work.
func TestE2EHelpFitsTheCommand(t *testing.T) {
	t.Parallel()
	envv := env(t, nil)
	show := run(t, envv, "show", "--help")
	require.Equal(t, 0, show.code, show)
	assert.LessOrEqual(t, strings.Count(show.stdout, "\n"), 20, "research show --help:\n%s", show.stdout)
	for _, want := range []string{"--format", "--store", "Global flags: --config FILE, -q/--quiet, -v/--verbose, --no-save, --no-input, --trace FILE (research help flags)"} {
		assert.Contains(t, show.stdout, want)
	}
	for _, not := range []string{"--model", "--addr", "--effort", "--search"} {
		assert.NotContains(t, show.stdout, not, "show reads no %s", not)
	}
	serve := run(t, envv, "serve", "--help")
	assert.Contains(t, serve.stdout, "--addr")
	assert.NotContains(t, serve.stdout, "--format")
	root := run(t, envv, "--help")
	assert.NotContains(t, root.stdout, "--addr", "a serve setting is not research's")
	assert.Contains(t, root.stdout, "completion")
	assert.Contains(t, root.stdout, "Exit status (docs/cli.md)")
	assert.Contains(t, root.stdout, "7\nthe answer cites no source")

	flags := run(t, envv, "help", "flags")
	require.Equal(t, 0, flags.code, flags)
	for _, want := range []string{"--no-input", "--model", "--addr", "--max-steps", "--format"} {
		assert.Contains(t, flags.stdout, want)
	}

	v := run(t, envv, "--version")
	require.Equal(t, 0, v.code, v)
	version := run(t, envv, "version")
	assert.Equal(t, version.stdout, v.stdout)
	assert.True(t, strings.HasPrefix(v.stdout, "research "), v.stdout)

	for _, shell := range []string{"bash", "zsh", "fish"} {
		res := run(t, envv, "completion", shell)
		require.Equal(t, 0, res.code, res)
		assert.Contains(t, res.stdout, "research", "%s completion", shell)
	}
}

// A page the agent may not read (a loopback address) tells the person how
// to allow it — once — while the model is only told it was refused.
func TestE2EAgentRefusedPageNamesTheFlag(t *testing.T) {
	t.Parallel()
	web, webRec := newFakeWeb(t)
	fetch := oaCall{Name: "fetch_page", Args: `{"url":"` + web.URL + `/notes"}`}
	oa := newFakeOpenAI(t, agentScript(
		oaReply{ToolCalls: []oaCall{fetch}},
		oaReply{ToolCalls: []oaCall{fetch}},
		oaReply{ToolCalls: []oaCall{terminate("success", "The page could not be read.")}},
	))
	res := run(t, env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()}),
		"agent", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "--tools", "fetch_page,terminate", "read my notes")
	require.Equal(t, 0, res.code, res)
	assert.Zero(t, webRec.count(), "the page was not read")
	assert.Contains(t, res.stderr, "✗ fetch_page")
	assert.Equal(t, 1, strings.Count(res.stderr, "hint: --allow-private-urls lets pages on private and loopback addresses be read"), res.stderr)
	for _, r := range oa.all() {
		assert.NotContains(t, string(r.Body), "allow-private-urls", "the model is not told how to lift the guard")
	}
}
