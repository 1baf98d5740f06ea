package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	geminiSecret = "AIza-gemini-secret-0123456789"
	tavilySecret = "tvly-secret-abcdef"
	openaiSecret = "sk-openai-secret-xyz"
)

// isolate clears every variable the loader reads, so the machine's
// environment cannot change a test's outcome, and returns a loader whose
// default config directory is empty.
func isolate(t *testing.T) Loader {
	t.Helper()
	for _, e := range table {
		for _, v := range e.Env {
			t.Setenv(v, "")
		}
	}
	t.Setenv(EnvConfigFile, "")
	dir := t.TempDir()
	return Loader{UserConfigDir: func() (string, error) { return dir, nil }}
}

// writeFile writes a config file and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// flags returns a flag set with every key flag, parsed from args.
func flags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	require.NoError(t, AddFlags(fs))
	require.NoError(t, fs.Parse(args))
	return fs
}

func TestDefaults(t *testing.T) {
	l := isolate(t)
	c, err := l.Load()
	require.NoError(t, err)
	assert.Empty(t, c.Model)
	assert.Equal(t, 3, c.InitialQueries)
	assert.Equal(t, 2, c.MaxLoops)
	assert.Equal(t, []string{SearchAuto}, c.Search)
	assert.True(t, c.SearchAuto())
	assert.Equal(t, FormatMarkdown, c.Format)
	assert.Equal(t, 0, c.MaxConcurrency, "no bound on model calls by default")
	assert.Equal(t, 0, c.SearchConcurrency, "no bound on searches by default")
	assert.Equal(t, 0, c.PageConcurrency, "no bound on page reads by default")
	assert.Equal(t, 3*time.Minute, c.LLMTimeout)
	assert.Equal(t, 30*time.Second, c.SearchTimeout)
	assert.Equal(t, 20*time.Second, c.FetchTimeout)
	assert.Equal(t, time.Duration(0), c.Timeout)
	assert.Equal(t, 3, c.Retries)
	assert.False(t, c.AllowPrivateURLs)
	assert.Equal(t, 20, c.Agent.MaxSteps)
	assert.False(t, c.Agent.Browser, "no browser unless asked for")
	assert.Equal(t, Browser{ActionTimeout: 30 * time.Second, MaxPages: 50, MaxTabs: 5}, c.Browser)
	assert.Equal(t, 2, c.Serve.MaxBrowsers)
	assert.Empty(t, c.File)
	for _, e := range c.Redacted() {
		assert.Equal(t, "default", e.Source, e.Key)
	}
}

func TestKeysTable(t *testing.T) {
	names, flagNames := map[string]bool{}, map[string]bool{}
	for _, k := range Keys() {
		assert.False(t, names[k.Name], "duplicate key %s", k.Name)
		names[k.Name] = true
		assert.NotEmpty(t, k.Help, k.Name)
		assert.NotEmpty(t, k.Default, k.Name)
		require.NotEmpty(t, k.Env, k.Name)
		assert.Equal(t, "DEEPGRAPH_"+strings.ToUpper(strings.ReplaceAll(k.Name, ".", "_")), k.Env[0])
		if k.Flag != "" {
			assert.False(t, flagNames[k.Flag], "duplicate flag %s", k.Flag)
			flagNames[k.Flag] = true
			assert.True(t, strings.HasPrefix(k.Flag, "--"), k.Flag)
		}
	}
	for _, want := range []string{"model", "query_generator_model", "reflection_model", "answer_model", "research_model",
		"number_of_initial_queries", "max_research_loops", "effort", "search", "corpus", "corpus_cache_dir", "searxng_url",
		"tavily_api_key", "brave_api_key", "gemini_api_key", "openai_api_key", "openai_base_url", "anthropic_api_key",
		"ollama_host", "allow_private_urls", "max_concurrency", "search_concurrency", "page_concurrency", "llm_timeout", "search_timeout", "fetch_timeout", "retries",
		"format", "agent.workspace", "agent.allow_exec", "agent.max_steps", "agent.tools"} {
		assert.True(t, names[want], "missing key %s", want)
	}
	// Keys hands out copies.
	k := Keys()
	k[0].Env[0] = "X"
	assert.Equal(t, "DEEPGRAPH_MODEL", Keys()[0].Env[0])
}

func TestPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		args    []string
		key     string
		get     func(*Config) any
		want    any
		wantSrc string
	}{
		{name: "default", key: "max_research_loops", get: loops, want: 2, wantSrc: "default"},
		{name: "file beats default", file: "max_research_loops: 4\n", key: "max_research_loops", get: loops, want: 4, wantSrc: "file"},
		{name: "env beats file", file: "max_research_loops: 4\n", env: map[string]string{"DEEPGRAPH_MAX_RESEARCH_LOOPS": "5"},
			key: "max_research_loops", get: loops, want: 5, wantSrc: "env DEEPGRAPH_MAX_RESEARCH_LOOPS"},
		{name: "flag beats env", file: "max_research_loops: 4\n", env: map[string]string{"DEEPGRAPH_MAX_RESEARCH_LOOPS": "5"},
			args: []string{"--loops", "6"}, key: "max_research_loops", get: loops, want: 6, wantSrc: "flag --loops"},
		{name: "an empty variable is unset", file: "max_research_loops: 4\n", env: map[string]string{"DEEPGRAPH_MAX_RESEARCH_LOOPS": ""},
			key: "max_research_loops", get: loops, want: 4, wantSrc: "file"},
		{name: "standard variable beats file", file: "searxng_url: http://file:8888\n", env: map[string]string{"SEARXNG_URL": "http://env:8888"},
			key: "searxng_url", get: func(c *Config) any { return c.SearXNGURL }, want: "http://env:8888", wantSrc: "env SEARXNG_URL"},
		{name: "DEEPGRAPH_ variable beats the standard one", env: map[string]string{"SEARXNG_URL": "http://std:1", "DEEPGRAPH_SEARXNG_URL": "http://ours:2"},
			key: "searxng_url", get: func(c *Config) any { return c.SearXNGURL }, want: "http://ours:2", wantSrc: "env DEEPGRAPH_SEARXNG_URL"},
		{name: "GEMINI_API_KEY beats GOOGLE_API_KEY", env: map[string]string{"GOOGLE_API_KEY": "g", "GEMINI_API_KEY": "m"},
			key: "gemini_api_key", get: func(c *Config) any { return c.GeminiAPIKey.Reveal() }, want: "m", wantSrc: "env GEMINI_API_KEY"},
		{name: "GOOGLE_API_KEY alone", env: map[string]string{"GOOGLE_API_KEY": "g"},
			key: "gemini_api_key", get: func(c *Config) any { return c.GeminiAPIKey.Reveal() }, want: "g", wantSrc: "env GOOGLE_API_KEY"},
		{name: "agent section in the file", file: "agent:\n  max_steps: 7\n", key: "agent.max_steps",
			get: func(c *Config) any { return c.Agent.MaxSteps }, want: 7, wantSrc: "file"},
		{name: "agent env", file: "agent:\n  max_steps: 7\n", env: map[string]string{"DEEPGRAPH_AGENT_MAX_STEPS": "9"}, key: "agent.max_steps",
			get: func(c *Config) any { return c.Agent.MaxSteps }, want: 9, wantSrc: "env DEEPGRAPH_AGENT_MAX_STEPS"},
		{name: "agent flag", env: map[string]string{"DEEPGRAPH_AGENT_MAX_STEPS": "9"}, args: []string{"--max-steps=11"}, key: "agent.max_steps",
			get: func(c *Config) any { return c.Agent.MaxSteps }, want: 11, wantSrc: "flag --max-steps"},
		{name: "list from the file", file: "search: [tavily, searxng]\n", key: "search",
			get: func(c *Config) any { return c.Search }, want: []string{"tavily", "searxng"}, wantSrc: "file"},
		{name: "list from env", env: map[string]string{"DEEPGRAPH_SEARCH": "Brave, tavily"}, key: "search",
			get: func(c *Config) any { return c.Search }, want: []string{"brave", "tavily"}, wantSrc: "env DEEPGRAPH_SEARCH"},
		{name: "duration from the file", file: "llm_timeout: 90s\n", key: "llm_timeout",
			get: func(c *Config) any { return c.LLMTimeout }, want: 90 * time.Second, wantSrc: "file"},
		{name: "bare number is seconds", env: map[string]string{"DEEPGRAPH_SEARCH_TIMEOUT": "45"}, key: "search_timeout",
			get: func(c *Config) any { return c.SearchTimeout }, want: 45 * time.Second, wantSrc: "env DEEPGRAPH_SEARCH_TIMEOUT"},
		{name: "bool flag", file: "allow_private_urls: false\n", args: []string{"--allow-private-urls"}, key: "allow_private_urls",
			get: func(c *Config) any { return c.AllowPrivateURLs }, want: true, wantSrc: "flag --allow-private-urls"},
		{name: "bool env", env: map[string]string{"DEEPGRAPH_ALLOW_PRIVATE_URLS": "yes"}, key: "allow_private_urls",
			get: func(c *Config) any { return c.AllowPrivateURLs }, want: true, wantSrc: "env DEEPGRAPH_ALLOW_PRIVATE_URLS"},
		{name: "browser flag", args: []string{"--browser"}, key: "agent.browser",
			get: func(c *Config) any { return c.Agent.Browser }, want: true, wantSrc: "flag --browser"},
		{name: "browser section in the file", file: "browser:\n  action_timeout: 45s\n  max_pages: 7\n", key: "browser.action_timeout",
			get: func(c *Config) any { return [2]any{c.Browser.ActionTimeout, c.Browser.MaxPages} }, want: [2]any{45 * time.Second, 7}, wantSrc: "file"},
		{name: "browser env", env: map[string]string{"DEEPGRAPH_BROWSER_CHROMIUM": "/opt/chrome/chrome"}, key: "browser.chromium",
			get: func(c *Config) any { return c.Browser.Chromium }, want: "/opt/chrome/chrome", wantSrc: "env DEEPGRAPH_BROWSER_CHROMIUM"},
		{name: "model shorthand flag", file: "model: gemini:gemini-2.5-pro\n", args: []string{"-m", "ollama:qwen3:8b"}, key: "model",
			get: func(c *Config) any { return c.Model }, want: "ollama:qwen3:8b", wantSrc: "flag --model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := isolate(t)
			if tt.file != "" {
				l.File = writeFile(t, "config.yaml", tt.file)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			l.Flags = flags(t, tt.args...)
			c, err := l.Load()
			require.NoError(t, err)
			assert.Equal(t, tt.want, tt.get(c))
			src := c.Source(tt.key).String()
			if tt.wantSrc == "file" {
				assert.Equal(t, "file "+l.File, src)
			} else {
				assert.Equal(t, tt.wantSrc, src)
			}
		})
	}
}

func loops(c *Config) any { return c.MaxLoops }

func TestDefaultFileAndFormats(t *testing.T) {
	t.Run("default file is read", func(t *testing.T) {
		l := isolate(t)
		dir, _ := l.UserConfigDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "deepgraph"), 0o700))
		p := filepath.Join(dir, "deepgraph", "config.yaml")
		require.NoError(t, os.WriteFile(p, []byte("number_of_initial_queries: 5\n"), 0o600))
		c, err := l.Load()
		require.NoError(t, err)
		assert.Equal(t, 5, c.InitialQueries)
		assert.Equal(t, p, c.File)
	})
	t.Run("DEEPGRAPH_CONFIG names the file", func(t *testing.T) {
		l := isolate(t)
		p := writeFile(t, "c.json", `{"max_research_loops": 7, "agent": {"allow_exec": true}}`)
		t.Setenv(EnvConfigFile, p)
		c, err := l.Load()
		require.NoError(t, err)
		assert.Equal(t, 7, c.MaxLoops)
		assert.True(t, c.Agent.AllowExec)
	})
	t.Run("toml", func(t *testing.T) {
		l := isolate(t)
		l.File = writeFile(t, "c.toml", "max_research_loops = 3\nsearch = [\"brave\"]\n[agent]\ntools = [\"terminate\"]\n")
		c, err := l.Load()
		require.NoError(t, err)
		assert.Equal(t, 3, c.MaxLoops)
		assert.Equal(t, []string{"brave"}, c.Search)
		assert.Equal(t, []string{"terminate"}, c.Agent.Tools)
	})
	t.Run("an explicit file must exist", func(t *testing.T) {
		l := isolate(t)
		l.File = filepath.Join(t.TempDir(), "missing.yaml")
		_, err := l.Load()
		require.ErrorIs(t, err, ErrInvalid)
		assert.Contains(t, err.Error(), "missing.yaml")
	})
	t.Run("unsupported extension", func(t *testing.T) {
		l := isolate(t)
		l.File = writeFile(t, "c.ini", "x=1")
		_, err := l.Load()
		require.ErrorIs(t, err, ErrInvalid)
		assert.Contains(t, err.Error(), ".yaml, .yml, .json or .toml")
	})
	t.Run("syntax error names the file", func(t *testing.T) {
		l := isolate(t)
		l.File = writeFile(t, "c.yaml", "model: [unclosed\n")
		_, err := l.Load()
		require.ErrorIs(t, err, ErrInvalid)
		assert.Contains(t, err.Error(), l.File)
	})
}

func TestEffort(t *testing.T) {
	tests := []struct {
		name                   string
		file                   string
		env                    map[string]string
		args                   []string
		wantQueries, wantLoops int
		wantQSrc               string
	}{
		{name: "no effort", wantQueries: 3, wantLoops: 2, wantQSrc: "default"},
		{name: "effort beats defaults", args: []string{"--effort", "high"}, wantQueries: 5, wantLoops: 10, wantQSrc: "effort high (flag --effort)"},
		{name: "low", env: map[string]string{"DEEPGRAPH_EFFORT": "LOW"}, wantQueries: 1, wantLoops: 1, wantQSrc: "effort low (env DEEPGRAPH_EFFORT)"},
		{name: "explicit flag wins over effort flag", args: []string{"--effort", "high", "--queries", "2"}, wantQueries: 2, wantLoops: 10, wantQSrc: "flag --queries"},
		{name: "effort flag wins over file queries", file: "number_of_initial_queries: 4\n", args: []string{"--effort", "medium"},
			wantQueries: 3, wantLoops: 3, wantQSrc: "effort medium (flag --effort)"},
		{name: "queries flag wins over file effort", file: "effort: high\n", args: []string{"--queries", "1"},
			wantQueries: 1, wantLoops: 10, wantQSrc: "flag --queries"},
		{name: "same layer: explicit wins", file: "effort: high\nmax_research_loops: 4\n", wantQueries: 5, wantLoops: 4, wantQSrc: "effort high (file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := isolate(t)
			if tt.file != "" {
				l.File = writeFile(t, "config.yaml", tt.file)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			l.Flags = flags(t, tt.args...)
			c, err := l.Load()
			require.NoError(t, err)
			assert.Equal(t, tt.wantQueries, c.InitialQueries)
			assert.Equal(t, tt.wantLoops, c.MaxLoops)
			assert.True(t, strings.HasPrefix(c.Source("number_of_initial_queries").String(), tt.wantQSrc), c.Source("number_of_initial_queries").String())
		})
	}
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		args []string
		want []string // each a whole line of the error
	}{
		{name: "loops out of range", args: []string{"--loops", "-1"},
			want: []string{"max_research_loops: -1 is not allowed: use a whole number from 1 to 50 (from flag --loops)"}},
		{name: "queries not a number", env: map[string]string{"DEEPGRAPH_NUMBER_OF_INITIAL_QUERIES": "many"},
			want: []string{"number_of_initial_queries: many is not allowed: use a whole number from 1 to 20 (from env DEEPGRAPH_NUMBER_OF_INITIAL_QUERIES)"}},
		{name: "fractional in a file", file: "retries: 1.5\n",
			want: []string{"retries: 1.5 is not allowed: use a whole number from 0 to 10 (from file %s)"}},
		{name: "negative limit", args: []string{"--page-concurrency", "-1"},
			want: []string{"page_concurrency: -1 is not allowed: use 0 (no bound) or a whole number from 1 to 100000 (from flag --page-concurrency)"}},
		{name: "limit not a number", env: map[string]string{"DEEPGRAPH_SEARCH_CONCURRENCY": "few"},
			want: []string{"search_concurrency: few is not allowed: use 0 (no bound) or a whole number from 1 to 100000 (from env DEEPGRAPH_SEARCH_CONCURRENCY)"}},
		{name: "effort", args: []string{"--effort", "extreme"},
			want: []string{"effort: extreme is not allowed: use one of low, medium, high (from flag --effort)"}},
		{name: "format", env: map[string]string{"DEEPGRAPH_FORMAT": "html"},
			want: []string{"format: html is not allowed: use one of markdown, json (from env DEEPGRAPH_FORMAT)"}},
		{name: "search provider", args: []string{"--search", "google"},
			want: []string{`search: google is not allowed: use auto, gemini, or a list of searxng, tavily, brave in the order to try them (e.g. "searxng,tavily") (from flag --search)`}},
		{name: "auto mixed with providers", args: []string{"--search", "auto,tavily"},
			want: []string{`search: auto,tavily is not allowed: use auto, gemini, or a list of searxng, tavily, brave in the order to try them (e.g. "searxng,tavily") (from flag --search)`}},
		{name: "duration", file: "llm_timeout: soon\n",
			want: []string{"llm_timeout: soon is not allowed: use a duration from 1s to 24h, like 30s, 2m or 1h30m (a bare number is seconds) (from file %s)"}},
		{name: "bool", env: map[string]string{"DEEPGRAPH_ALLOW_PRIVATE_URLS": "maybe"},
			want: []string{"allow_private_urls: maybe is not allowed: use true or false (from env DEEPGRAPH_ALLOW_PRIVATE_URLS)"}},
		{name: "url", env: map[string]string{"SEARXNG_URL": "localhost:8888"},
			want: []string{"searxng_url: localhost:8888 is not allowed: use an http or https URL such as http://localhost:8888 (from env SEARXNG_URL)"}},
		{name: "a URL's password is not repeated", env: map[string]string{"OPENAI_BASE_URL": "http://bob:hunter2@127.0.0.1:1/v1"},
			want: []string{"openai_base_url: http://bob:xxxxx@127.0.0.1:1/v1 is not allowed: use an http or https URL without user:password in it (from env OPENAI_BASE_URL)"}},
		{name: "context budget too small", args: []string{"--context-budget", "300"},
			want: []string{"context_budget: 300 is not allowed: use 0 (the answer model's default) or a whole number of tokens from 1000 to 2000000 (from flag --context-budget)"}},
		{name: "research budget too small", env: map[string]string{"DEEPGRAPH_RESEARCH_BUDGET": "100"},
			want: []string{"research_budget: 100 is not allowed: use 0 (from the effort) or a whole number of tokens from 500 to 1000000 (from env DEEPGRAPH_RESEARCH_BUDGET)"}},
		{name: "model spec", args: []string{"--model", "gpt-4o"},
			want: []string{"model: gpt-4o is not allowed: use a model spec provider:model"}},
		{name: "several at once", file: "max_research_loops: 0\nformat: pdf\n",
			want: []string{"max_research_loops: 0 is not allowed: use a whole number from 1 to 50 (from file %s)",
				"format: pdf is not allowed: use one of markdown, json (from file %s)"}},
		{name: "a list where a value belongs", file: "model: [a, b]\n",
			want: []string{`model: "[a b]" is not allowed: use a single value, not a list or a section (from file %s)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := isolate(t)
			if tt.file != "" {
				l.File = writeFile(t, "config.yaml", tt.file)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			l.Flags = flags(t, tt.args...)
			_, err := l.Load()
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			var ce *Error
			assert.ErrorAs(t, err, &ce)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tt.want), err.Error())
			for i, w := range tt.want {
				if strings.Contains(w, "%s") {
					w = fmt.Sprintf(w, l.File)
				}
				assert.True(t, strings.HasPrefix(lines[i], w), "got  %s\nwant %s", lines[i], w)
			}
		})
	}
}

func TestUnknownKeys(t *testing.T) {
	l := isolate(t)
	l.File = writeFile(t, "config.yaml", "modle: gemini:gemini-2.5-flash\nmax_loops: 3\nagent:\n  workspce: /tmp/x\nworkspace: /tmp/y\ncompletely_unrelated_thing: 1\n")
	_, err := l.Load()
	require.ErrorIs(t, err, ErrInvalid)
	var uk *UnknownKeyError
	require.ErrorAs(t, err, &uk)
	msg := err.Error()
	for _, want := range []string{
		fmt.Sprintf(`unknown key "modle" in %s: did you mean "model"?`, l.File),
		`unknown key "agent.workspce" in ` + l.File + `: did you mean "agent.workspace"?`,
		`unknown key "workspace" in ` + l.File + `: did you mean "agent.workspace"?`,
		`unknown key "max_loops"`,
		`unknown key "completely_unrelated_thing" in ` + l.File + " (`research config keys` lists every key)",
	} {
		assert.Contains(t, msg, want)
	}
	assert.Len(t, strings.Split(msg, "\n"), 5)

	t.Run("a section written as a value", func(t *testing.T) {
		l := isolate(t)
		l.File = writeFile(t, "config.yaml", "agent: yes\n")
		_, err := l.Load()
		require.ErrorIs(t, err, ErrInvalid)
		assert.Contains(t, err.Error(), "agent: yes is not allowed: use a section of keys (workspace, allow_exec, max_steps, tool_timeout, tools, deny_tools, approve_tools, browser, mcp, text_mode)")
	})
}

func TestRedaction(t *testing.T) {
	l := isolate(t)
	l.File = writeFile(t, "config.yaml", "tavily_api_key: "+tavilySecret+"\n")
	t.Setenv("GEMINI_API_KEY", geminiSecret)
	t.Setenv("DEEPGRAPH_OPENAI_API_KEY", openaiSecret)
	c, err := l.Load()
	require.NoError(t, err)
	require.Equal(t, geminiSecret, c.GeminiAPIKey.Reveal())

	got := map[string]string{}
	for _, e := range c.Redacted() {
		got[e.Key] = e.Value
	}
	assert.Equal(t, "set (from GEMINI_API_KEY)", got["gemini_api_key"])
	assert.Equal(t, "set (in "+l.File+")", got["tavily_api_key"])
	assert.Equal(t, "set (from DEEPGRAPH_OPENAI_API_KEY)", got["openai_api_key"])
	assert.Equal(t, "not set", got["brave_api_key"])

	var logBuf bytes.Buffer
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("cfg", "key", c.GeminiAPIKey, "cfg", c)
	js, err := json.Marshal(c)
	require.NoError(t, err)
	rendered := []string{c.String(), fmt.Sprintf("%v", *c), fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", *c), string(js), logBuf.String()}
	for _, s := range rendered {
		for _, secret := range []string{geminiSecret, tavilySecret, openaiSecret} {
			assert.NotContains(t, s, secret)
		}
	}
	assert.Contains(t, c.String(), "gemini_api_key")
	assert.Regexp(t, `(?m)^gemini_api_key +set \(from GEMINI_API_KEY\)$`, c.String())

	t.Run("a bad secret is not echoed", func(t *testing.T) {
		l := isolate(t)
		t.Setenv("BRAVE_API_KEY", "two words-"+tavilySecret)
		_, err := l.Load()
		require.ErrorIs(t, err, ErrInvalid)
		assert.NotContains(t, err.Error(), tavilySecret)
		assert.Contains(t, err.Error(), "brave_api_key: [redacted] is not allowed")
	})
	t.Run("Invalid redacts secrets", func(t *testing.T) {
		e := c.Invalid("gemini_api_key", geminiSecret, "a key", nil)
		assert.NotContains(t, e.Error(), geminiSecret)
		assert.Contains(t, e.Error(), "(from env GEMINI_API_KEY)")
	})
}

func TestGetenv(t *testing.T) {
	t.Run("from GOOGLE_API_KEY: only under that name", func(t *testing.T) {
		l := isolate(t)
		t.Setenv("GOOGLE_API_KEY", geminiSecret)
		c, err := l.Load()
		require.NoError(t, err)
		assert.Equal(t, geminiSecret, c.Getenv("GOOGLE_API_KEY"))
		assert.Empty(t, c.Getenv("GEMINI_API_KEY"))
	})
	t.Run("from the file: under the preferred name", func(t *testing.T) {
		l := isolate(t)
		l.File = writeFile(t, "config.yaml", "gemini_api_key: "+geminiSecret+"\nopenai_base_url: http://127.0.0.1:9/v1\nollama_host: gpu:11434\n")
		c, err := l.Load()
		require.NoError(t, err)
		assert.Equal(t, geminiSecret, c.Getenv("GEMINI_API_KEY"))
		assert.Empty(t, c.Getenv("GOOGLE_API_KEY"))
		assert.Equal(t, "http://127.0.0.1:9/v1", c.Getenv("OPENAI_BASE_URL"))
		assert.Equal(t, "gpu:11434", c.Getenv("OLLAMA_HOST"))
	})
	t.Run("the process environment is not consulted", func(t *testing.T) {
		l := isolate(t)
		t.Setenv("HOME_IS_NOT_A_KEY", "x")
		c, err := l.Load()
		require.NoError(t, err)
		assert.Empty(t, c.Getenv("HOME_IS_NOT_A_KEY"))
		assert.Empty(t, c.Getenv("DEEPGRAPH_MODEL"))
		assert.Empty(t, c.Getenv("GEMINI_API_KEY"))
	})
}

func TestDefaultModel(t *testing.T) {
	l := isolate(t)
	l.File = writeFile(t, "config.yaml", "openai_api_key: "+openaiSecret+"\n")
	var seen string
	l.DefaultModel = func(getenv func(string) string) (string, string) {
		seen = getenv("OPENAI_API_KEY")
		if seen != "" {
			return "openai:gpt-4.1-mini", "openai_api_key is set"
		}
		return "", ""
	}
	c, err := l.Load()
	require.NoError(t, err)
	assert.Equal(t, openaiSecret, seen)
	assert.Equal(t, "openai:gpt-4.1-mini", c.Model)
	assert.Equal(t, "auto: openai_api_key is set", c.Source("model").String())
	assert.Equal(t, "openai:gpt-4.1-mini", c.RoleModel("answer"))

	t.Run("an explicit model is kept", func(t *testing.T) {
		l.Flags = flags(t, "--model", "gemini:gemini-2.5-pro", "--answer-model", "anthropic:claude-sonnet-4-5")
		c, err := l.Load()
		require.NoError(t, err)
		assert.Equal(t, "gemini:gemini-2.5-pro", c.Model)
		assert.Equal(t, "gemini:gemini-2.5-pro", c.RoleModel("query"))
		assert.Equal(t, "anthropic:claude-sonnet-4-5", c.RoleModel("answer"))
	})
}

func TestPathsExpandHome(t *testing.T) {
	l := isolate(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	l.File = writeFile(t, "config.yaml", "corpus: ~/notes\nagent:\n  workspace: ~/ws\n")
	t.Setenv("DEEPGRAPH_CORPUS_CACHE_DIR", "~/cache/x")
	c, err := l.Load()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, "notes"), c.Corpus)
	assert.Equal(t, filepath.Join(home, "ws"), c.Agent.Workspace)
	assert.Equal(t, filepath.Join(home, "cache", "x"), c.CorpusCacheDir)
	l.File = writeFile(t, "config.yaml", "corpus: ~other/notes\n")
	c, err = l.Load()
	require.NoError(t, err)
	assert.Equal(t, "~other/notes", c.Corpus, "only the user's own ~ is expanded")
}

func TestSearchHelpers(t *testing.T) {
	l := isolate(t)
	t.Setenv("TAVILY_API_KEY", tavilySecret)
	t.Setenv("SEARXNG_URL", "http://127.0.0.1:8888")
	c, err := l.Load()
	require.NoError(t, err)
	assert.Equal(t, []string{ProviderSearXNG, ProviderTavily}, c.ConfiguredWebProviders())
	assert.False(t, c.SearchGemini())
	assert.Equal(t, "TAVILY_API_KEY", ProviderVariable(ProviderTavily))
}

func TestAddFlags(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	require.NoError(t, AddFlags(fs, "max_research_loops", "allow_private_urls", "llm_timeout"))
	assert.Equal(t, "int", fs.Lookup("loops").Value.Type())
	assert.Equal(t, "bool", fs.Lookup("allow-private-urls").Value.Type())
	assert.Equal(t, "string", fs.Lookup("llm-timeout").Value.Type())
	assert.Contains(t, fs.Lookup("loops").Usage, "(default 2; key max_research_loops)")
	assert.Nil(t, fs.Lookup("model"))
	err := AddFlags(fs, "gemini_api_key")
	require.Error(t, err, "secrets have no flag")
	assert.Equal(t, []string{"agent.workspace", "agent.allow_exec", "agent.max_steps", "agent.tool_timeout", "agent.tools", "agent.deny_tools", "agent.approve_tools", "agent.browser", "agent.mcp", "agent.text_mode"}, KeysWithFlags("agent."))
}

func TestClosest(t *testing.T) {
	tests := []struct{ in, want string }{
		{"modle", "model"},
		{"max_research_loop", "max_research_loops"},
		{"tavily_key", "tavily_api_key"},
		{"xyzzy", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, closest(tt.in), tt.in)
	}
	assert.Equal(t, 3, distance("kitten", "sitting"))
	assert.Equal(t, 0, distance("", ""))
	assert.True(t, errors.Is(&UnknownKeyError{}, ErrInvalid))
}

// TestDocsListEveryKey keeps the key table of docs/configuration.md in
// step with the key table here, the one place defaults are written down.
func TestDocsListEveryKey(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)
	doc := string(b)
	esc := strings.NewReplacer("<", "&lt;", ">", "&gt;", "|", `\|`)
	for _, k := range Keys() {
		envs := make([]string, len(k.Env))
		for i, e := range k.Env {
			envs[i] = "`" + e + "`"
		}
		row := fmt.Sprintf("| `%s` | %s | %s | ", k.Name, esc.Replace(k.Default), strings.Join(envs, ", "))
		assert.Contains(t, doc, row, "docs/configuration.md must list key %s with its default and variables", k.Name)
	}
}

// The store key: where runs are kept. A DSN's password is a secret like the
// API keys.
func TestStore(t *testing.T) {
	const password = "s3cr3t-pw-4711"
	dsn := "postgres://app:" + password + "@db.example:5432/runs?sslmode=require"

	t.Run("values", func(t *testing.T) {
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		for in, want := range map[string]string{
			"off": StoreOff, "none": StoreOff, "OFF": StoreOff,
			"~/runs.db":           filepath.Join(home, "runs.db"),
			"/var/lib/dg/runs.db": "/var/lib/dg/runs.db",
			"postgresql://u@h/db": "postgresql://u@h/db",
		} {
			l := isolate(t)
			c, err := l.withFlags(t, "--store", in).Load()
			require.NoError(t, err, in)
			assert.Equal(t, want, c.Store.Reveal(), in)
		}
		for in, want := range map[string]string{
			"ftp://example.com/x": "other URL schemes are not stores",
			"postgres:///db":      "a DSN like postgres://user@host:5432/db",
		} {
			l := isolate(t)
			_, err := l.withFlags(t, "--store", in).Load()
			require.ErrorIs(t, err, ErrInvalid, in)
			assert.Contains(t, err.Error(), want)
		}
	})

	t.Run("where by default", func(t *testing.T) {
		l := isolate(t)
		state := t.TempDir()
		t.Setenv("XDG_STATE_HOME", state)
		c, err := l.Load()
		require.NoError(t, err)
		loc, err := c.StoreLocation()
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(state, "deepgraph", "runs.db"), loc)

		t.Setenv("XDG_STATE_HOME", "relative/dir") // ignored, as the XDG spec says
		loc, err = c.StoreLocation()
		require.NoError(t, err)
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(home, ".local", "state", "deepgraph", "runs.db"), loc)

		c.Store = StoreOff
		loc, err = c.StoreLocation()
		require.NoError(t, err)
		assert.Empty(t, loc, "off: no store")
	})

	t.Run("a DSN's password is never shown", func(t *testing.T) {
		l := isolate(t)
		t.Setenv("DEEPGRAPH_STORE", dsn)
		c, err := l.Load()
		require.NoError(t, err)
		assert.Equal(t, dsn, c.Store.Reveal(), "the program gets the real DSN")
		assert.Contains(t, c.Secrets(), password, "the console masks it")
		assert.True(t, IsPostgres(c.Store.Reveal()))

		var logBuf bytes.Buffer
		slog.New(slog.NewTextHandler(&logBuf, nil)).Info("cfg", "cfg", c)
		js, err := json.Marshal(c)
		require.NoError(t, err)
		for _, s := range []string{c.String(), fmt.Sprintf("%v", *c), fmt.Sprintf("%+v", *c), string(js), logBuf.String(), RedactDSN(c.Store.Reveal()), c.Store.String(), fmt.Sprintf("%#v", c.Store)} {
			assert.NotContains(t, s, password)
		}
		assert.Regexp(t, `(?m)^store +postgres://app:xxxxx@db\.example:5432/runs\?sslmode=require`, c.String())

		l = isolate(t)
		_, err = l.withFlags(t, "--store", "postgres://app:"+password+"@/runs").Load()
		require.ErrorIs(t, err, ErrInvalid)
		assert.NotContains(t, err.Error(), password, "a refused DSN is not echoed with its password")
	})
}

// withFlags returns l with flags parsed from args.
func (l Loader) withFlags(t *testing.T, args ...string) Loader {
	l.Flags = flags(t, args...)
	return l
}

// research_budget is read from a flag or the environment; 0 (unset) leaves
// it to the effort.
func TestResearchBudgetKey(t *testing.T) {
	c, err := isolate(t).withFlags(t, "--effort", "high").Load()
	require.NoError(t, err)
	assert.Zero(t, c.ResearchBudget, "unset: derived from the effort by package research")
	c, err = isolate(t).withFlags(t, "--effort", "high", "--research-budget", "2500").Load()
	require.NoError(t, err)
	assert.Equal(t, 2500, c.ResearchBudget)
}
