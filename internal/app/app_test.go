package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/tools"
)

// allVars are every variable the configuration reads.
var allVars = func() []string {
	var out []string
	for _, k := range config.Keys() {
		out = append(out, k.Env...)
	}
	return append(out, config.EnvConfigFile)
}()

// load builds a Config from a config file's content, variables and flags,
// with the machine's environment shut out.
func load(t *testing.T, file string, vars map[string]string, args ...string) *config.Config {
	t.Helper()
	for _, v := range allVars {
		t.Setenv(v, "")
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	l := config.Loader{UserConfigDir: func() (string, error) { return dir, nil }, DefaultModel: DefaultModel}
	if file != "" {
		l.File = filepath.Join(t.TempDir(), "config.yaml")
		require.NoError(t, os.WriteFile(l.File, []byte(file), 0o600))
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	require.NoError(t, config.AddFlags(fs))
	require.NoError(t, fs.Parse(args))
	l.Flags = fs
	cfg, err := l.Load()
	require.NoError(t, err)
	return cfg
}

func TestChooseBackend(t *testing.T) {
	corpus := t.TempDir()
	tests := []struct {
		name     string
		vars     map[string]string
		args     []string
		want     BackendKind
		wantProv []string
		wantErr  string
		noSearch bool
	}{
		{name: "corpus wins over everything", vars: map[string]string{"GEMINI_API_KEY": "k", "SEARXNG_URL": "http://s:1"},
			args: []string{"--corpus", corpus}, want: BackendCorpus},
		{name: "auto: providers whose variable is set, in order", vars: map[string]string{"GEMINI_API_KEY": "k", "BRAVE_API_KEY": "b", "SEARXNG_URL": "http://s:1"},
			want: BackendSearch, wantProv: []string{"searxng", "brave"}},
		{name: "auto: Gemini grounding when no provider is set", vars: map[string]string{"GEMINI_API_KEY": "k"}, want: BackendGemini},
		{name: "auto: nothing for a model without search", vars: map[string]string{"OPENAI_API_KEY": "k"}, noSearch: true,
			wantErr: "no search back end is configured: set SEARXNG_URL, TAVILY_API_KEY or BRAVE_API_KEY, use --corpus DIR"},
		{name: "explicit order", vars: map[string]string{"OPENAI_API_KEY": "k", "TAVILY_API_KEY": "t", "SEARXNG_URL": "http://s:1"},
			args: []string{"--search", "tavily,searxng"}, want: BackendSearch, wantProv: []string{"tavily", "searxng"}},
		{name: "explicit provider without its variable", vars: map[string]string{"OPENAI_API_KEY": "k"}, args: []string{"--search", "brave"},
			wantErr: "search lists brave, but BRAVE_API_KEY is not set (config key brave_api_key)"},
		{name: "gemini explicitly, with providers set", vars: map[string]string{"GEMINI_API_KEY": "k", "TAVILY_API_KEY": "t"},
			args: []string{"--search", "gemini"}, want: BackendGemini},
		{name: "gemini needs a Gemini research model", vars: map[string]string{"GEMINI_API_KEY": "k", "OPENAI_API_KEY": "o"},
			args: []string{"--search", "gemini", "--research-model", "openai:gpt-4.1-mini"}, wantErr: "needs a Gemini research model, but research_model is openai:gpt-4.1-mini"},
		{name: "the research role decides, not the default model", vars: map[string]string{"GEMINI_API_KEY": "k", "OPENAI_API_KEY": "o"},
			args: []string{"--model", "openai:gpt-4.1-mini", "--research-model", "gemini:gemini-2.5-pro"}, want: BackendGemini},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, "", tt.vars, tt.args...)
			plan, err := ChooseBackend(cfg, cfg.RoleModel(llm.RoleResearch))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrSetup)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Equal(t, tt.noSearch, IsNoSearch(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, plan.Kind)
			assert.Equal(t, tt.wantProv, plan.Providers)
			assert.NotEmpty(t, plan.Why)
		})
	}
}

func TestProviderOptions(t *testing.T) {
	t.Run("a standard variable is left to Getenv", func(t *testing.T) {
		cfg := load(t, "", map[string]string{"GOOGLE_API_KEY": "g-key", "OPENAI_BASE_URL": "http://o:1/v1"})
		o := ProviderOptions(cfg, nil)
		assert.Empty(t, o.GeminiAPIKey)
		assert.Empty(t, o.OpenAIBaseURL)
		assert.Equal(t, "g-key", o.Getenv("GOOGLE_API_KEY"))
		assert.Equal(t, "http://o:1/v1", o.Getenv("OPENAI_BASE_URL"))
	})
	t.Run("file and DEEPGRAPH_ values go in Options", func(t *testing.T) {
		cfg := load(t, "openai_api_key: file-key\nollama_host: gpu:11434\n", map[string]string{"DEEPGRAPH_GEMINI_API_KEY": "dg-key"},
			"--retries", "0", "--max-concurrency", "3", "--llm-timeout", "45s")
		o := ProviderOptions(cfg, nil)
		assert.Equal(t, "file-key", o.OpenAIAPIKey)
		assert.Equal(t, "dg-key", o.GeminiAPIKey)
		assert.Equal(t, "gpu:11434", o.OllamaHost)
		assert.Equal(t, llm.ClientConfig{MaxRetries: -1, MaxConcurrency: 3, Timeout: 45 * time.Second, RetryBackoff: 500 * time.Millisecond}, o.Client)
	})
}

func TestDefaultModel(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	spec, why := DefaultModel(env(map[string]string{"OPENAI_API_KEY": "k"}))
	assert.Equal(t, "openai:gpt-4.1-mini", spec)
	assert.Equal(t, "an OpenAI key is set", why)
	spec, why = DefaultModel(env(map[string]string{"OPENAI_API_KEY": "k", "GOOGLE_API_KEY": "g"}))
	assert.Equal(t, "gemini:gemini-2.5-flash", spec)
	assert.Equal(t, "a Gemini key is set", why)
	spec, why = DefaultModel(env(nil))
	assert.Empty(t, spec)
	assert.Empty(t, why)
}

func TestOpenModels(t *testing.T) {
	t.Run("roles with one spec share the model", func(t *testing.T) {
		cfg := load(t, "", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
			"--answer-model", "openai:gpt-4.1")
		m, err := OpenModels(context.Background(), cfg, nil)
		require.NoError(t, err)
		assert.Same(t, m.Model(llm.RoleQuery), m.Model(llm.RoleReflection))
		assert.Same(t, m.Model(llm.RoleQuery), m.Model(llm.RoleResearch))
		assert.NotSame(t, m.Model(llm.RoleQuery), m.Model(llm.RoleAnswer))
		assert.Equal(t, map[string]string{"query": "openai:gpt-4.1-mini", "research": "openai:gpt-4.1-mini",
			"reflection": "openai:gpt-4.1-mini", "answer": "openai:gpt-4.1"}, m.Specs())
	})
	t.Run("no model at all", func(t *testing.T) {
		cfg := load(t, "", nil)
		_, err := OpenModels(context.Background(), cfg, nil)
		assert.ErrorIs(t, err, ErrNoModel)
		assert.ErrorIs(t, err, ErrSetup)
	})
	t.Run("a provider without its key", func(t *testing.T) {
		cfg := load(t, "", map[string]string{"GEMINI_API_KEY": "k"}, "--answer-model", "anthropic:claude-sonnet-4-5")
		_, err := OpenModels(context.Background(), cfg, nil)
		assert.ErrorIs(t, err, ErrSetup)
		assert.ErrorIs(t, err, llm.ErrAuth)
		assert.Contains(t, err.Error(), "ANTHROPIC_API_KEY")
	})
}

// TestConcurrencySharedPerProvider checks that two models of one provider
// share the max_concurrency bound (with one query a round, 1 is not raised).
func TestConcurrencySharedPerProvider(t *testing.T) {
	var inFlight, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	defer srv.Close()
	cfg := load(t, "", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL + "/v1"},
		"--max-concurrency", "1", "--queries", "1", "--query-model", "openai:model-a", "--answer-model", "openai:model-b")
	m, err := OpenModels(context.Background(), cfg, nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for _, role := range []string{llm.RoleQuery, llm.RoleAnswer, llm.RoleQuery, llm.RoleAnswer} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := m.Model(role).Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), peak.Load(), "both models wait for the provider's one slot")
}

func TestOpenBackendCorpus(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# Checkpoints\n\nRuns resume from the last checkpoint after a crash.\n"), 0o600))
	cfg := load(t, "", map[string]string{"GEMINI_API_KEY": "k"}, "--corpus", dir, "--corpus-cache-dir", t.TempDir())
	plan, err := ChooseBackend(cfg, cfg.RoleModel(llm.RoleResearch))
	require.NoError(t, err)
	b, err := OpenBackend(context.Background(), cfg, plan, nil)
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, "search:local", b.Name())
	res, err := b.Searcher.Search(context.Background(), "resume checkpoint", search.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, res)
	assert.True(t, strings.HasPrefix(res[0].URL, "file://"))

	t.Run("a missing corpus directory", func(t *testing.T) {
		cfg := load(t, "", map[string]string{"GEMINI_API_KEY": "k"}, "--corpus", filepath.Join(dir, "nope"))
		_, err := OpenBackend(context.Background(), cfg, Plan{Kind: BackendCorpus, Corpus: cfg.Corpus}, nil)
		require.ErrorIs(t, err, ErrSetup)
		assert.Contains(t, err.Error(), "corpus: "+filepath.Join(dir, "nope")+" is not allowed: use an existing directory")
		assert.Contains(t, err.Error(), "(from flag --corpus)")
	})
}

func TestOpenBackendSearch(t *testing.T) {
	cfg := load(t, "", map[string]string{"GEMINI_API_KEY": "k", "SEARXNG_URL": "http://127.0.0.1:9", "TAVILY_API_KEY": "t"})
	plan, err := ChooseBackend(cfg, cfg.RoleModel(llm.RoleResearch))
	require.NoError(t, err)
	b, err := OpenBackend(context.Background(), cfg, plan, nil)
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, "search:searxng,tavily", b.Name())
	chain, ok := b.Searcher.(*search.Chain)
	require.True(t, ok)
	assert.Len(t, chain.Providers(), 2)

	g, err := OpenBackend(context.Background(), cfg, Plan{Kind: BackendGemini}, nil)
	require.NoError(t, err)
	assert.Equal(t, "gemini-grounding", g.Name())
	assert.Nil(t, g.Searcher)
}

func TestWorkspace(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ws := t.TempDir()
	file := filepath.Join(ws, "f.txt")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	tests := []struct {
		name, dir, wantErr string
	}{
		{name: "a project directory", dir: ws},
		{name: "home is refused", dir: home, wantErr: "not your home directory"},
		{name: "root is refused", dir: "/", wantErr: "not a file-system root"},
		{name: "must exist", dir: filepath.Join(ws, "missing"), wantErr: "use an existing directory"},
		{name: "must be a directory", dir: file, wantErr: "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, "", map[string]string{"HOME": home}, "--workspace", tt.dir)
			got, temp, err := workspace(cfg)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrSetup)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), "agent.workspace: ")
				return
			}
			require.NoError(t, err)
			assert.False(t, temp)
			want, _ := filepath.EvalSymlinks(tt.dir)
			assert.Equal(t, want, got)
		})
	}
	t.Run("a temporary directory by default", func(t *testing.T) {
		tmp := t.TempDir()
		cfg := load(t, "", map[string]string{"HOME": home, "TMPDIR": tmp})
		got, temp, err := workspace(cfg)
		require.NoError(t, err)
		assert.True(t, temp)
		assert.True(t, strings.HasPrefix(got, filepath.Join(tmp, "deepgraph-agent-")), got)
		info, err := os.Stat(got)
		require.NoError(t, err)
		assert.True(t, info.IsDir())
	})
}

func TestNewAgentTools(t *testing.T) {
	base := map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
	// An executable that stands for Chromium: the browser starts at its
	// first action, which these tests never take.
	chromium := filepath.Join(t.TempDir(), "chromium")
	require.NoError(t, os.WriteFile(chromium, []byte("#!/bin/sh\nexit 1\n"), 0o755))
	tests := []struct {
		name    string
		vars    map[string]string
		args    []string
		human   bool
		want    []string
		wantErr string
	}{
		{name: "default set", want: []string{"fetch_page", "str_replace_editor", "planning", "terminate"}},
		{name: "with search, exec and a human", vars: map[string]string{"SEARXNG_URL": "http://127.0.0.1:9"}, args: []string{"--allow-exec"}, human: true,
			want: []string{"web_search", "fetch_page", "str_replace_editor", "python_execute", "bash", "planning", "ask_human", "deep_research", "terminate"}},
		{name: "a subset", args: []string{"--tools", "str_replace_editor"}, want: []string{"str_replace_editor", "terminate"}},
		{name: "deep_research alone", vars: map[string]string{"SEARXNG_URL": "http://127.0.0.1:9"}, args: []string{"--tools", "deep_research"},
			want: []string{"deep_research", "terminate"}},
		{name: "a deny-list", args: []string{"--allow-exec", "--deny-tools", "planning,python_execute,str_*"}, want: []string{"fetch_page", "bash", "terminate"}},
		{name: "terminate is never denied", args: []string{"--deny-tools", "*"}, want: []string{"terminate"}},
		{name: "approval without a store", args: []string{"--approve-tools"}, wantErr: "--approve-tools (agent.approve_tools) pauses the run until each tool call with side effects is approved, which needs the run store"},
		{name: "exec without allow", args: []string{"--tools", "python_execute"}, wantErr: "python_execute also needs --allow-exec"},
		{name: "the browser", vars: map[string]string{"DEEPGRAPH_BROWSER_CHROMIUM": chromium}, args: []string{"--browser"},
			want: []string{"fetch_page", "str_replace_editor", "planning", "browser", "terminate"}},
		{name: "the browser alone", vars: map[string]string{"DEEPGRAPH_BROWSER_CHROMIUM": chromium}, args: []string{"--browser", "--tools", "browser"},
			want: []string{"browser", "terminate"}},
		{name: "the browser without Chromium", vars: map[string]string{"DEEPGRAPH_BROWSER_CHROMIUM": "/nonexistent/chromium"}, args: []string{"--browser"},
			wantErr: "the browser tool (--browser, agent.browser) needs Chromium: no Chromium found: /nonexistent/chromium is not an executable"},
		{name: "the browser without --browser", args: []string{"--tools", "browser"}, wantErr: "browser also needs --browser (agent.browser)"},
		{name: "unknown tool", args: []string{"--tools", "web_search"}, wantErr: "agent.tools: web_search is not allowed: use names of available tools: fetch_page, str_replace_editor, planning, terminate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{}
			for k, v := range base {
				vars[k] = v
			}
			for k, v := range tt.vars {
				vars[k] = v
			}
			cfg := load(t, "", vars, append([]string{"--workspace", t.TempDir()}, tt.args...)...)
			aio := AgentIO{}
			if tt.human {
				aio.Human = tools.NewTerminalAsker(strings.NewReader(""), &strings.Builder{})
			}
			a, err := NewAgent(context.Background(), cfg, aio)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrSetup)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			defer a.Close()
			assert.Equal(t, tt.want, a.Tools.Names(), "the tools the agent offers, terminate included")
			assert.Equal(t, contains(tt.want, "bash"), HasExec(a.Tools))
			assert.Equal(t, contains(tt.want, "browser"), a.BrowserNote() != "")
			assert.Equal(t, "openai:gpt-4.1-mini", a.Spec)
		})
	}
}

func TestMermaid(t *testing.T) {
	m, err := Mermaid()
	require.NoError(t, err)
	for _, n := range []string{"generate_query", "web_research", "reflection", "finalize_answer"} {
		assert.Contains(t, m, n)
	}
	_, err = noModel{}.Generate(context.Background(), nil)
	assert.Error(t, err)
}

func TestSetupErrorMatches(t *testing.T) {
	cause := errors.New("boom")
	err := setupErr("wrapping: %w", cause)
	assert.ErrorIs(t, err, ErrSetup)
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, "wrapping: boom", err.Error())
}

// The JSON documents name dropped citations dropped_citations, as
// research.Report does, carry the run's warnings, and documents stored
// with v1's citations_dropped still read back.
func TestDocumentsNameDroppedCitationsOnce(t *testing.T) {
	rep := &research.Report{Question: "q", Answer: "a", Dropped: 2, Warnings: []research.Warning{
		{Kind: research.WarningPagesRefused, Message: "3 pages were\nrefused", Count: 3, Items: []string{"http://10.0.0.1/\x1b[31m"}},
	}}
	data, err := ResearchDocument(rep, nil, nil)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"dropped_citations": 2`)
	assert.NotContains(t, string(data), "citations_dropped")
	assert.Contains(t, string(data), `"warnings": [`)
	var doc ReportDoc
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, 2, doc.DroppedCitations)
	assert.Equal(t, []WarningDoc{{Kind: "pages_refused", Message: "3 pages were refused", Count: 3, Items: []string{"http://10.0.0.1/ [31m"}}}, doc.Warnings)
	assert.Equal(t, "deepgraph.research.report/v2", doc.Schema)

	empty, err := ResearchDocument(&research.Report{}, nil, nil)
	require.NoError(t, err)
	assert.Contains(t, string(empty), `"warnings": []`)

	agent, err := json.Marshal(AgentResultDoc(&nodes.AgentResult{Task: "t", Dropped: 1}, "fake", nil))
	require.NoError(t, err)
	assert.Contains(t, string(agent), `"dropped_citations":1`)
	assert.NotContains(t, string(agent), "citations_dropped")

	var old ReportDoc
	require.NoError(t, json.Unmarshal([]byte(`{"schema":"deepgraph.research.report/v1","markdown":"m","citations_dropped":4}`), &old))
	assert.Equal(t, 4, old.DroppedCitations)
	assert.Equal(t, "m", old.Markdown)
	var oldAgent AgentDoc
	require.NoError(t, json.Unmarshal([]byte(`{"schema":"deepgraph.agent.result/v1","answer":"x","citations_dropped":3}`), &oldAgent))
	assert.Equal(t, 3, oldAgent.DroppedCitations)
	assert.Equal(t, "x", oldAgent.Answer)
}

func TestActivityLineOfAWarning(t *testing.T) {
	w := research.Warning{Kind: research.WarningNoResults, Message: "\"q\":\nthe search found no results"}
	assert.Equal(t, `Warning: "q": the search found no results`, ActivityLine(research.Activity{Kind: research.ActivityWarning, Warning: &w}))
	assert.Empty(t, ActivityLine(research.Activity{Kind: research.ActivityWarning}))
}
