package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/llm"
)

// Key documents one configuration key: its name in config files, its
// default, the environment variables and the flag that set it.
type Key struct {
	// Name is the key as written in a config file, snake_case; keys of the
	// agent section are written "agent.workspace" here and nested under
	// "agent:" in a file.
	Name string `json:"name"`
	// Default is the default value as text, or how it is chosen.
	Default string `json:"default"`
	// Env lists the environment variables that set the key, highest
	// precedence first: DEEPGRAPH_<KEY> (dots become underscores), then the
	// provider's standard variables where there are any.
	Env []string `json:"env"`
	// Flag is the command-line flag that sets it ("--loops"), or "".
	Flag string `json:"flag,omitempty"`
	// Secret keys are never printed.
	Secret bool `json:"secret,omitempty"`
	// Help says what the key does and which values are allowed.
	Help string `json:"help"`
}

// Keys returns the documentation of every key, in a stable order. It is
// the one place the defaults are written down: the CLI's `research config
// keys` prints it and docs/configuration.md mirrors it.
func Keys() []Key {
	out := make([]Key, len(table))
	for i, e := range table {
		out[i] = e.Key
		out[i].Env = append([]string(nil), e.Env...)
	}
	return out
}

// Bounds of the numeric keys.
const (
	MaxInitialQueries = 20
	MaxLoops          = 50
	MaxConcurrency    = 256
	// MaxLimit bounds max_concurrency, search_concurrency and
	// page_concurrency.
	MaxLimit      = 100000
	MaxRetries    = 10
	MaxAgentSteps = 1000
)

// entry is a Key with the code that parses, validates and shows its value.
type entry struct {
	Key
	def  string                       // the default, parsed by set ("" = zero value)
	set  func(c *Config, v any) error // parse, validate, assign; the error says what is allowed
	show func(c *Config) string       // the value as text ("" when empty)
	// secret returns the field of a Secret key.
	secret func(c *Config) Secret
	// redact, when set, hides what is secret in a value of the key (a
	// DSN's password) wherever the value is shown: in errors and in
	// Redacted. A Secret key hides the whole value instead.
	redact func(string) string
	// empty is what an empty value means, for display.
	empty string
	// kind is the flag type: "string", "int", "bool", or "list" (a
	// repeatable flag).
	kind string
	// raw keys are read from the config file as written, not through
	// viper, which lowercases the keys of maps (an env var's name must
	// keep its case).
	raw bool
}

func (e entry) emptyText() string {
	if e.empty != "" {
		return e.empty
	}
	if e.Default != "" {
		return e.Default
	}
	return `""`
}

// envName is the DEEPGRAPH_ variable of a key.
func envName(key string) string {
	return "DEEPGRAPH_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

func withEnv(e entry, std ...string) entry {
	e.Env = append([]string{envName(e.Name)}, std...)
	return e
}

// table is every key, in documentation order.
var table = []entry{
	withEnv(modelKey("model", "--model", "auto: the first provider with a key set (Gemini, OpenAI, Anthropic), else OLLAMA_HOST",
		"Model spec provider:model used for every role without its own model, e.g. gemini:gemini-2.5-flash, openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:qwen3:8b, compatible:<model>.",
		func(c *Config) *string { return &c.Model }, "none (no provider key is set)")),
	withEnv(modelKey("query_generator_model", "--query-model", "same as model", "Model that writes the search queries.",
		func(c *Config) *string { return &c.QueryModel }, "= model")),
	withEnv(modelKey("reflection_model", "--reflection-model", "same as model", "Model that judges whether the research suffices and writes follow-up queries.",
		func(c *Config) *string { return &c.ReflectionModel }, "= model")),
	withEnv(modelKey("answer_model", "--answer-model", "same as model", "Model that writes the final answer.",
		func(c *Config) *string { return &c.AnswerModel }, "= model")),
	withEnv(modelKey("research_model", "--research-model", "same as model", "Model that researches each query (with the gemini back end it must be a Gemini model).",
		func(c *Config) *string { return &c.ResearchModel }, "= model")),
	withEnv(intKey("number_of_initial_queries", "--queries", 3, 1, MaxInitialQueries,
		"Most search queries of the first round, and of each follow-up round. Set explicitly, it wins over effort.",
		func(c *Config) *int { return &c.InitialQueries })),
	withEnv(contextBudgetKey()),
	withEnv(researchBudgetKey()),
	withEnv(intKey("max_research_loops", "--loops", 2, 1, MaxLoops,
		"Most reflections per question; 1 means a single round of research. Set explicitly, it wins over effort.",
		func(c *Config) *int { return &c.MaxLoops })),
	withEnv(enumKey("effort", "--effort", "", "none",
		"Preset of queries and loops: low (1 query, 1 loop), medium (3, 3), high (5, 10).",
		func(c *Config) *string { return &c.Effort }, "low", "medium", "high")),
	withEnv(searchKey()),
	withEnv(stringKey("corpus", "--corpus", "", "none (search the web)",
		"Directory of Markdown, text and HTML files searched instead of the web (no web access at all).",
		func(c *Config) *string { return &c.Corpus }, expandHome)),
	withEnv(stringKey("corpus_cache_dir", "--corpus-cache-dir", "", "<user cache dir>/deepgraph/corpus",
		"Where corpus indexes are kept.",
		func(c *Config) *string { return &c.CorpusCacheDir }, expandHome)),
	withEnv(stringKey("searxng_url", "", "", "none",
		"Base URL of a SearXNG instance, e.g. http://localhost:8888 (its settings.yml must enable the json format).",
		func(c *Config) *string { return &c.SearXNGURL }, checkURL), "SEARXNG_URL"),
	withEnv(secretKey("tavily_api_key", "Tavily API key (tvly-…).", func(c *Config) *Secret { return &c.TavilyAPIKey }), "TAVILY_API_KEY"),
	withEnv(stringKey("tavily_base_url", "", "https://api.tavily.com", "",
		"Tavily API endpoint (a proxy).", func(c *Config) *string { return &c.TavilyBaseURL }, checkURL)),
	withEnv(secretKey("brave_api_key", "Brave Search API subscription token.", func(c *Config) *Secret { return &c.BraveAPIKey }), "BRAVE_API_KEY"),
	withEnv(stringKey("brave_base_url", "", "https://api.search.brave.com", "",
		"Brave Search API endpoint (a proxy).", func(c *Config) *string { return &c.BraveBaseURL }, checkURL)),
	withEnv(secretKey("gemini_api_key", "Gemini API key (https://aistudio.google.com/apikey).",
		func(c *Config) *Secret { return &c.GeminiAPIKey }), "GEMINI_API_KEY", "GOOGLE_API_KEY"),
	withEnv(stringKey("gemini_base_url", "", "", "https://generativelanguage.googleapis.com/",
		"Gemini API endpoint (a proxy or a test server).", func(c *Config) *string { return &c.GeminiBaseURL }, checkURL), "GOOGLE_GEMINI_BASE_URL"),
	withEnv(secretKey("openai_api_key", "OpenAI API key (also sent to an OpenAI-compatible server at openai_base_url).",
		func(c *Config) *Secret { return &c.OpenAIAPIKey }), "OPENAI_API_KEY"),
	withEnv(stringKey("openai_base_url", "", "", "https://api.openai.com/v1",
		"OpenAI-compatible API root, e.g. http://localhost:8000/v1 for vLLM (used by openai: and compatible: models).",
		func(c *Config) *string { return &c.OpenAIBaseURL }, checkURL), "OPENAI_BASE_URL"),
	withEnv(secretKey("anthropic_api_key", "Anthropic API key.", func(c *Config) *Secret { return &c.AnthropicAPIKey }), "ANTHROPIC_API_KEY"),
	withEnv(stringKey("anthropic_base_url", "", "", "https://api.anthropic.com",
		"Anthropic API root (a proxy or gateway).", func(c *Config) *string { return &c.AnthropicBaseURL }, checkURL), "ANTHROPIC_BASE_URL"),
	withEnv(stringKey("ollama_host", "", "", "http://localhost:11434",
		"Ollama server (host:port or URL) for ollama: models.", func(c *Config) *string { return &c.OllamaHost }, nil), "OLLAMA_HOST"),
	withEnv(boolKey("allow_private_urls", "--allow-private-urls", false,
		"Let the page reader fetch loopback and private-network addresses (self-hosted pages). Cloud-metadata addresses stay refused.",
		func(c *Config) *bool { return &c.AllowPrivateURLs })),
	withEnv(boolKey("resolve_sources", "", true,
		"With Gemini grounding, show each source's real URL and page title instead of the 130-character redirect (each redirect and page title read behind the SSRF guard, a few seconds at most); false keeps the redirects.",
		func(c *Config) *bool { return &c.ResolveSources })),
	withEnv(limitKey("max_concurrency", "--max-concurrency",
		"Model calls in flight per model provider, shared by every run of the process; more wait their turn. For a provider's rate limit: "+
			"0 means no bound, and a bound below one round's queries is raised to them, so a run's own calls never wait on each other.",
		func(c *Config) *int { return &c.MaxConcurrency })),
	withEnv(limitKey("search_concurrency", "--search-concurrency",
		"Searches in flight per web search provider, shared by every run of the process; more wait their turn. For a provider's rate limit: "+
			"0 means no bound, and a bound below one round's queries is raised to them.",
		func(c *Config) *int { return &c.SearchConcurrency })),
	withEnv(limitKey("page_concurrency", "--page-concurrency",
		"Web pages read at once, by every run of the process together (pages come from many sites: this bounds memory and CPU, not a provider). "+
			"0 means no bound; a bound below one round's page reads (queries × 3) is raised to them.",
		func(c *Config) *int { return &c.PageConcurrency })),
	withEnv(durationKey("llm_timeout", "--llm-timeout", llm.DefaultTimeout, time.Second, 24*time.Hour,
		"Bound on one model call, retries included.", func(c *Config) *time.Duration { return &c.LLMTimeout })),
	withEnv(durationKey("search_timeout", "--search-timeout", 30*time.Second, time.Second, time.Hour,
		"Bound on one web search, retries included.", func(c *Config) *time.Duration { return &c.SearchTimeout })),
	withEnv(durationKey("fetch_timeout", "--fetch-timeout", 20*time.Second, time.Second, time.Hour,
		"Bound on reading one web page.", func(c *Config) *time.Duration { return &c.FetchTimeout })),
	withEnv(durationKey("timeout", "--timeout", 0, 0, 7*24*time.Hour,
		"Bound on the whole run; 0 means none. When it passes, the report gathered so far is printed, marked incomplete.",
		func(c *Config) *time.Duration { return &c.Timeout })),
	withEnv(maxCostKey()),
	withEnv(pricesKey()),
	withEnv(intKey("retries", "--retries", 3, 0, MaxRetries,
		"Retries after a failed request to a model or search provider (429 honouring Retry-After, 5xx, dropped connections, a reply stream cut off). 0 also turns off the graph nodes' retries of transient model errors.",
		func(c *Config) *int { return &c.Retries })),
	withEnv(durationKey("retry_backoff", "", 500*time.Millisecond, time.Millisecond, time.Minute,
		"First wait before a retry, doubling (with jitter) after each; a longer Retry-After from the server wins.",
		func(c *Config) *time.Duration { return &c.RetryBackoff })),
	withEnv(enumKey("format", "--format", FormatMarkdown, "",
		"Report format on stdout: markdown, or json (one JSON document).",
		func(c *Config) *string { return &c.Format }, FormatMarkdown, FormatJSON)),
	withEnv(storeKey()),
	withEnv(mcpServersKey()),
	withEnv(stringKey("agent.workspace", "--workspace", "", "a new temporary directory per run",
		"Directory the agent's editor and exec tools are confined to. It must exist and may not be a file-system root, a system directory (/etc, /usr, /var, …) or your home directory itself.",
		func(c *Config) *string { return &c.Agent.Workspace }, expandHome)),
	withEnv(boolKey("agent.allow_exec", "--allow-exec", false,
		"Offer python_execute and bash to the agent. They run model-written code as you: not a sandbox.",
		func(c *Config) *bool { return &c.Agent.AllowExec })),
	withEnv(intKey("agent.max_steps", "--max-steps", 20, 1, MaxAgentSteps,
		"Most think steps of an agent run.", func(c *Config) *int { return &c.Agent.MaxSteps })),
	withEnv(durationKey("agent.tool_timeout", "--tool-timeout", 2*time.Minute, time.Second, 24*time.Hour,
		"Bound on one tool call of the agent (python_execute and bash are killed with their child processes when it passes); "+
			"the model is told the call did not finish. ask_human and deep_research are bounded by --timeout only: a person takes the time they take, "+
			"and a research run takes minutes by design (rounds of searches, page reads and model calls, each bounded by its own timeouts), which this bound would cut short.",
		func(c *Config) *time.Duration { return &c.Agent.ToolTimeout })),
	withEnv(toolsKey()),
	withEnv(denyToolsKey()),
	withEnv(boolKey("agent.approve_tools", "--approve-tools", false,
		"Ask before each tool call with side effects runs (bash, python_execute, the editor's writes, MCP tools not annotated read-only): the run pauses "+
			"until you approve it, edit its arguments or reject it with a reason — on the terminal, with research resume ID --answer, or over HTTP. Needs the run store.",
		func(c *Config) *bool { return &c.Agent.ApproveTools })),
	withEnv(boolKey("agent.browser", "--browser", false,
		"Offer the browser tool: a headless Chromium the agent drives (pages that need JavaScript, forms, clicks, tabs), with the SSRF guard of fetch_page on every request, "+
			"downloads, uploads and device permissions refused, and a fresh profile per run. Needs Chromium installed (see browser.chromium).",
		func(c *Config) *bool { return &c.Agent.Browser })),
	withEnv(mcpKey()),
	withEnv(boolKey("agent.text_mode", "--text-mode", false,
		"Drive the model with a text ReAct protocol instead of native tool calls (for models without tool support).",
		func(c *Config) *bool { return &c.Agent.TextMode })),
	withEnv(stringKey("serve.addr", "--addr", DefaultServeAddr, "",
		"Address research serve listens on, host:port. Loopback by default; any other address needs serve.token.",
		func(c *Config) *string { return &c.Serve.Addr }, checkAddr)),
	withEnv(secretKey("serve.token",
		"Token every API request to research serve must carry (x-api-key, or Authorization: Bearer …). Required when serve.addr is not loopback.",
		func(c *Config) *Secret { return &c.Serve.Token })),
	withEnv(listKey("serve.cors_origins", "",
		"Origins (scheme://host[:port]) of other sites whose pages may call research serve's API. None by default; * is refused.",
		func(c *Config) *[]string { return &c.Serve.CORSOrigins }, checkOrigin)),
	withEnv(intKey("serve.max_running", "--max-running", 4, 1, MaxConcurrency,
		"Runs research serve executes at once; the others wait in its queue.", func(c *Config) *int { return &c.Serve.MaxRunning })),
	withEnv(intKey("serve.queue_size", "--queue-size", 64, 0, 100000,
		"Runs that may wait in research serve's queue; beyond it new runs get 429 with Retry-After.",
		func(c *Config) *int { return &c.Serve.QueueSize })),
	withEnv(serveConnsKey()),
	withEnv(intKey("serve.max_connections_per_client", "", 64, 1, 1_000_000,
		"Connections one client address may hold open to research serve or research mcp --http; beyond it the client's idle or unfinished ones are closed to make room, or the new one gets 503. "+
			"Raise it behind a reverse proxy, whose connections all come from one address.",
		func(c *Config) *int { return &c.Serve.MaxConnectionsPerClient })),
	withEnv(boolKey("serve.resume_interrupted", "--resume-interrupted", false,
		"At start, continue the runs that were running when research serve last stopped (otherwise they wait as interrupted for a run with input null).",
		func(c *Config) *bool { return &c.Serve.ResumeInterrupted })),
	withEnv(listKey("serve.models", "",
		"Model specs a client of research serve may choose besides the configured ones.",
		func(c *Config) *[]string { return &c.Serve.Models }, checkSpec)),
	withEnv(boolKey("serve.allow_agent", "--allow-agent", true,
		"Let clients of research serve start agent runs (code execution still needs agent.allow_exec).",
		func(c *Config) *bool { return &c.Serve.AllowAgent })),
	withEnv(boolKey("serve.review", "--review", false,
		"Research runs of research serve pause before each round of searches for their queries to be approved, edited or rejected (a HITLRequest interrupt, which Agent Chat UI answers), unless a run's config.configurable.review is false: for clients that send no configuration, such as Agent Chat UI.",
		func(c *Config) *bool { return &c.Serve.Review })),
	withEnv(intKey("serve.max_browsers", "", 2, 1, MaxConcurrency,
		"Browsers (one per agent run with agent.browser) research serve and research mcp run at once; a run whose browser finds none free waits for one, within its action's time.",
		func(c *Config) *int { return &c.Serve.MaxBrowsers })),
	withEnv(stringKey("browser.chromium", "", "", "found: /usr/bin/chromium, else chromium, chromium-browser, google-chrome or chrome on PATH",
		"Chromium or Chrome executable the browser tool runs (install: apt-get install chromium, dnf install chromium, brew install --cask chromium).",
		func(c *Config) *string { return &c.Browser.Chromium }, expandHome)),
	withEnv(durationKey("browser.action_timeout", "", 30*time.Second, time.Second, time.Hour,
		"Bound on one browser action, page loads included; a page still loading at three quarters of it is stopped and shown as far as it loaded.",
		func(c *Config) *time.Duration { return &c.Browser.ActionTimeout })),
	withEnv(intKey("browser.max_pages", "", 50, 1, 100000,
		"Most pages one run's browser loads (navigations and new tabs); past it, actions that would load one are refused.",
		func(c *Config) *int { return &c.Browser.MaxPages })),
	withEnv(intKey("browser.max_tabs", "", 5, 1, 100,
		"Most tabs open at once in one run's browser; a page that opens one more has it closed.",
		func(c *Config) *int { return &c.Browser.MaxTabs })),
	withEnv(boolKey("browser.no_sandbox", "", false,
		"Run Chromium without its sandbox, for containers without user namespaces (as root it always runs without). Pages then run less confined: prefer a container or VM that allows the sandbox.",
		func(c *Config) *bool { return &c.Browser.NoSandbox })),
}

// sections are the keys that hold other keys in a config file.
var sections = []string{"agent", "serve", "browser"}

func lookup(name string) (entry, bool) {
	for _, e := range table {
		if e.Name == name {
			return e, true
		}
	}
	return entry{}, false
}

// --- key constructors ---------------------------------------------------

// stringKey is a string key; check, if set, validates a non-empty value and
// returns it normalised.
func stringKey(name, flag, def, defText, help string, field func(*Config) *string, check func(string) (string, error)) entry {
	if defText == "" {
		defText = def
	}
	return entry{
		Key: Key{Name: name, Default: defText, Flag: flag, Help: help},
		def: def,
		set: func(c *Config, v any) error {
			s, err := asString(v)
			if err != nil {
				return err
			}
			s = strings.TrimSpace(s)
			if check != nil && s != "" {
				if s, err = check(s); err != nil {
					return err
				}
			}
			*field(c) = s
			return nil
		},
		show: func(c *Config) string { return *field(c) },
	}
}

func modelKey(name, flag, defText, help string, field func(*Config) *string, empty string) entry {
	e := stringKey(name, flag, "", defText, help, field, func(s string) (string, error) {
		if _, _, err := llm.ParseSpec(s); err != nil {
			return "", allowedError{"a model spec provider:model, e.g. gemini:gemini-2.5-flash, openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:qwen3:8b or compatible:<model>", nil}
		}
		return s, nil
	})
	e.empty = empty
	return e
}

func secretKey(name, help string, field func(*Config) *Secret) entry {
	return entry{
		Key: Key{Name: name, Default: "none", Secret: true, Help: help},
		set: func(c *Config, v any) error {
			s, err := asString(v)
			if err != nil {
				return err
			}
			s = strings.TrimSpace(s)
			if strings.ContainsAny(s, "\r\n\t ") {
				return allowedError{"a single token without spaces or line breaks", nil}
			}
			*field(c) = Secret(s)
			return nil
		},
		show:   func(c *Config) string { return field(c).String() },
		secret: func(c *Config) Secret { return *field(c) },
	}
}

func intKey(name, flag string, def, lo, hi int, help string, field func(*Config) *int) entry {
	allowed := fmt.Sprintf("a whole number from %d to %d", lo, hi)
	return entry{
		Key: Key{Name: name, Default: strconv.Itoa(def), Flag: flag, Help: help},
		def: strconv.Itoa(def),
		set: func(c *Config, v any) error {
			n, err := asInt(v)
			if err != nil || n < lo || n > hi {
				return allowedError{allowed, nil}
			}
			*field(c) = n
			return nil
		},
		show: func(c *Config) string { return strconv.Itoa(*field(c)) },
		kind: "int",
	}
}

// limitKey is a concurrency bound: 0 (the default) means none.
// MaxContextBudget bounds context_budget, in tokens.
const MaxContextBudget = 2_000_000

func contextBudgetKey() entry {
	const allowed = "0 (the answer model's default) or a whole number of tokens from 1000 to 2000000"
	e := intKey("context_budget", "--context-budget", 0, 0, MaxContextBudget,
		"Tokens of findings that reflection (a third of it) and the answer read; beyond it older findings are condensed into notes that keep their citations. "+
			"0 means the answer model's default: 24000, or 8000 for open-weight models (llama, qwen, mistral, …) usually served with a small window.",
		func(c *Config) *int { return &c.ContextBudget })
	e.Default = "0 (per model)"
	inner := e.set
	e.set = func(c *Config, v any) error {
		if err := inner(c, v); err != nil || c.ContextBudget != 0 && c.ContextBudget < 1000 {
			return allowedError{allowed, nil}
		}
		return nil
	}
	return e
}

// MinResearchBudget and MaxResearchBudget bound research_budget, in
// tokens, when it is set.
const (
	MinResearchBudget = 500
	MaxResearchBudget = 1_000_000
)

func researchBudgetKey() entry {
	allowed := fmt.Sprintf("0 (from the effort) or a whole number of tokens from %d to %d", MinResearchBudget, MaxResearchBudget)
	e := intKey("research_budget", "--research-budget", 0, 0, MaxResearchBudget,
		"Tokens of each research prompt, the one that summarises a query's search results and pages; beyond it the pages' text is shortened, fairly across them, keeping each page's start and every source's label. "+
			"0 means from the queries and loops: 75000 tokens shared by queries × loops prompts, each from 1000 to 4000 (low and medium effort 4000, high 1500).",
		func(c *Config) *int { return &c.ResearchBudget })
	e.Default = "0 (from the effort)"
	inner := e.set
	e.set = func(c *Config, v any) error {
		if err := inner(c, v); err != nil || c.ResearchBudget != 0 && c.ResearchBudget < MinResearchBudget {
			return allowedError{allowed, nil}
		}
		return nil
	}
	return e
}

// serveConnsKey is serve.max_connections: 0 (the default) derives it from
// the open-file limit.
func serveConnsKey() entry {
	e := intKey("serve.max_connections", "", 0, 0, 1_000_000,
		"Connections research serve or research mcp --http holds open at once; beyond it idle or unfinished ones are closed to make room, or the new one gets 503. "+
			"0 means half the process's open-file limit (ulimit -n), at most 4096, so that connections cannot use up the file descriptors the server needs.",
		func(c *Config) *int { return &c.Serve.MaxConnections })
	e.Default = "0 (half of ulimit -n)"
	return e
}

func limitKey(name, flag, help string, field func(*Config) *int) entry {
	e := intKey(name, flag, 0, 0, MaxLimit, help, field)
	e.Default = "0 (no bound)"
	inner := e.set
	e.set = func(c *Config, v any) error {
		if err := inner(c, v); err != nil {
			return allowedError{fmt.Sprintf("0 (no bound) or a whole number from 1 to %d", MaxLimit), nil}
		}
		return nil
	}
	return e
}

func boolKey(name, flag string, def bool, help string, field func(*Config) *bool) entry {
	return entry{
		Key: Key{Name: name, Default: strconv.FormatBool(def), Flag: flag, Help: help},
		def: strconv.FormatBool(def),
		set: func(c *Config, v any) error {
			b, err := asBool(v)
			if err != nil {
				return allowedError{"true or false", nil}
			}
			*field(c) = b
			return nil
		},
		show: func(c *Config) string { return strconv.FormatBool(*field(c)) },
		kind: "bool",
	}
}

func durationKey(name, flag string, def, lo, hi time.Duration, help string, field func(*Config) *time.Duration) entry {
	allowed := fmt.Sprintf("a duration from %s to %s, like 30s, 2m or 1h30m (a bare number is seconds)", fmtDur(lo), fmtDur(hi))
	if lo == 0 {
		allowed = fmt.Sprintf("a duration up to %s, like 30s, 2m or 1h30m (a bare number is seconds; 0 means none)", fmtDur(hi))
	}
	return entry{
		Key: Key{Name: name, Default: fmtDur(def), Flag: flag, Help: help},
		def: def.String(),
		set: func(c *Config, v any) error {
			d, err := asDuration(v)
			if err != nil || d < lo || d > hi {
				return allowedError{allowed, nil}
			}
			*field(c) = d
			return nil
		},
		show: func(c *Config) string { return fmtDur(*field(c)) },
	}
}

func enumKey(name, flag, def, defText, help string, field func(*Config) *string, allowed ...string) entry {
	if defText == "" {
		defText = def
	}
	text := "one of " + strings.Join(allowed, ", ")
	return entry{
		Key: Key{Name: name, Default: defText, Flag: flag, Help: help},
		def: def,
		set: func(c *Config, v any) error {
			s, err := asString(v)
			if err != nil {
				return allowedError{text, nil}
			}
			s = strings.ToLower(strings.TrimSpace(s))
			if s == "" && def == "" {
				*field(c) = ""
				return nil
			}
			for _, a := range allowed {
				if s == a {
					*field(c) = s
					return nil
				}
			}
			return allowedError{text, nil}
		},
		show:  func(c *Config) string { return *field(c) },
		empty: defText,
	}
}

func searchKey() entry {
	allowed := `auto, gemini, or a list of searxng, tavily, brave in the order to try them (e.g. "searxng,tavily")`
	return entry{
		Key: Key{Name: "search", Default: SearchAuto, Flag: "--search",
			Help: "Search back end: auto (every web provider whose URL or key is set, else Gemini's Google Search grounding when the research model is Gemini), gemini (Google Search grounding), or a list of web providers tried in order."},
		def: SearchAuto,
		set: func(c *Config, v any) error {
			items, err := asList(v)
			if err != nil {
				return allowedError{allowed, nil}
			}
			for i := range items {
				items[i] = strings.ToLower(items[i])
			}
			if len(items) == 0 {
				items = []string{SearchAuto}
			}
			if len(items) == 1 && (items[0] == SearchAuto || items[0] == SearchGemini) {
				c.Search = items
				return nil
			}
			seen := map[string]bool{}
			for _, it := range items {
				if !contains(WebProviders(), it) || seen[it] {
					return allowedError{allowed, nil}
				}
				seen[it] = true
			}
			c.Search = items
			return nil
		},
		show: func(c *Config) string { return strings.Join(c.Search, ",") },
	}
}

func storeKey() entry {
	e := stringKey("store", "--store", "", "<user state dir>/deepgraph/runs.db",
		"Where runs are kept, to list, show and resume them: a SQLite file, a postgres:// DSN, or off (--no-save) to keep nothing.",
		func(c *Config) *string { return (*string)(&c.Store) }, checkStore)
	e.redact = RedactDSN
	show := e.show
	e.show = func(c *Config) string { return RedactDSN(show(c)) }
	return e
}

func checkStore(s string) (string, error) {
	switch {
	case strings.EqualFold(s, StoreOff) || strings.EqualFold(s, "none"):
		return StoreOff, nil
	case IsPostgres(s):
		if u, err := url.Parse(s); err != nil || u.Host == "" {
			return "", allowedError{"a SQLite file path, a DSN like postgres://user@host:5432/db, or off", nil}
		}
		return s, nil
	case strings.Contains(s, "://"):
		return "", allowedError{"a SQLite file path, a postgres:// DSN, or off (other URL schemes are not stores)", nil}
	}
	return expandHome(s)
}

// listKey is a list of names; check, if set, validates and normalises
// each.
func listKey(name, flag, help string, field func(*Config) *[]string, check func(string) (string, error)) entry {
	return entry{
		Key: Key{Name: name, Default: "none", Flag: flag, Help: help},
		set: func(c *Config, v any) error {
			items, err := asList(v)
			if err != nil {
				return allowedError{"a list, comma-separated or a YAML list", nil}
			}
			for i, it := range items {
				if check != nil {
					if items[i], err = check(it); err != nil {
						return err
					}
				}
			}
			*field(c) = items
			return nil
		},
		show:  func(c *Config) string { return strings.Join(*field(c), ",") },
		empty: "none",
	}
}

func checkAddr(s string) (string, error) {
	if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
		return "", allowedError{"host:port, e.g. 127.0.0.1:8080 (loopback) or 0.0.0.0:8080 (every interface; needs serve.token)", nil}
	}
	return s, nil
}

func checkOrigin(s string) (string, error) {
	if s == "*" {
		return "", allowedError{"origins such as https://app.example.com; * is refused: list the sites that may call the API", nil}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
		return "", allowedError{"origins scheme://host[:port] without a path, e.g. https://app.example.com", nil}
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

func checkSpec(s string) (string, error) {
	if _, _, err := llm.ParseSpec(s); err != nil {
		return "", allowedError{"model specs provider:model, e.g. openai:gpt-4.1-mini", nil}
	}
	return s, nil
}

func toolsKey() entry {
	return entry{
		Key: Key{Name: "agent.tools", Default: "all available", Flag: "--tools",
			Help: "Built-in tools offered to the agent, comma-separated: web_search, fetch_page, str_replace_editor, python_execute, bash, ask_human, planning, deep_research, browser (with --browser), terminate; MCP tools as server.tool or server.* (when set, MCP tools it does not name are left out)."},
		set: func(c *Config, v any) error {
			items, err := asList(v)
			if err != nil {
				return allowedError{"a list of tool names, e.g. \"str_replace_editor,terminate\"", nil}
			}
			c.Agent.Tools = items
			return nil
		},
		show:  func(c *Config) string { return strings.Join(c.Agent.Tools, ",") },
		empty: "all available",
	}
}

func denyToolsKey() entry {
	return entry{
		Key: Key{Name: "agent.deny_tools", Default: "none", Flag: "--deny-tools",
			Help: "Tools never offered to the agent, comma-separated: names or patterns, such as bash or files.* for every tool of the MCP server files (terminate is always kept)."},
		set: func(c *Config, v any) error {
			items, err := asList(v)
			if err != nil {
				return allowedError{"a list of tool names or patterns, e.g. \"bash,files.write_*\"", nil}
			}
			c.Agent.DenyTools = items
			return nil
		},
		show:  func(c *Config) string { return strings.Join(c.Agent.DenyTools, ",") },
		empty: "none",
	}
}

// expandHome turns a leading "~" or "~/" into the home directory, as a
// shell would, for paths written in config files and DEEPGRAPH_ variables.
func expandHome(s string) (string, error) {
	if s != "~" && !strings.HasPrefix(s, "~/") {
		return s, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", allowedError{"a path; ~ cannot be expanded without a home directory", err}
	}
	return filepath.Join(home, strings.TrimPrefix(s, "~")), nil
}

func checkURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", allowedError{"an http or https URL such as http://localhost:8888", nil}
	}
	if u.User != nil {
		return "", allowedError{"an http or https URL without user:password in it", nil}
	}
	return s, nil
}

// allowedError is a value's failure: what is allowed, and the cause if any.
type allowedError struct {
	allowed string
	cause   error
}

func (e allowedError) Error() string { return e.allowed }

// --- conversions --------------------------------------------------------

// asString accepts strings and scalars (a YAML number where a string was
// meant is still taken as written).
func asString(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case int, int64, float64, bool:
		return fmt.Sprint(x), nil
	}
	return "", allowedError{"a single value, not a list or a section", nil}
}

func asInt(v any) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1e9 {
			return 0, fmt.Errorf("not a whole number")
		}
		return int(x), nil
	case string:
		return strconv.Atoi(strings.TrimSpace(x))
	}
	return 0, fmt.Errorf("not a number")
}

func asBool(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "t", "true", "yes", "y", "on":
			return true, nil
		case "0", "f", "false", "no", "n", "off":
			return false, nil
		}
	case int:
		if x == 0 || x == 1 {
			return x == 1, nil
		}
	}
	return false, fmt.Errorf("not a boolean")
}

func asDuration(v any) (time.Duration, error) {
	switch x := v.(type) {
	case time.Duration:
		return x, nil
	case int:
		return time.Duration(x) * time.Second, nil
	case int64:
		return time.Duration(x) * time.Second, nil
	case float64:
		if math.IsNaN(x) || math.Abs(x) > 1e9 {
			return 0, fmt.Errorf("out of range")
		}
		return time.Duration(x * float64(time.Second)), nil
	case string:
		s := strings.TrimSpace(x)
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return asDuration(f)
		}
		return time.ParseDuration(s)
	}
	return 0, fmt.Errorf("not a duration")
}

// asList accepts a list of strings or one string of items separated by
// commas or spaces.
func asList(v any) ([]string, error) {
	var raw []string
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		raw = strings.FieldsFunc(x, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	case []string:
		raw = x
	case []any:
		for _, it := range x {
			s, ok := it.(string)
			if !ok {
				return nil, fmt.Errorf("not a list of names")
			}
			raw = append(raw, s)
		}
	default:
		return nil, fmt.Errorf("not a list")
	}
	var out []string
	for _, s := range raw {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

func fmtDur(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
