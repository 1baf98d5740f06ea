package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/llm"
)

// Config is the resolved configuration of the research CLI: every key of the
// table (see Keys) with its effective value, and where each value came from.
// Build it with Load; the zero value is not meaningful.
type Config struct {
	// Model is the model spec ("provider:model") used for every role that
	// has no model of its own. Empty until a default is chosen (see
	// Loader.DefaultModel).
	Model string
	// QueryModel, ReflectionModel, AnswerModel and ResearchModel are the
	// models per role of the deep-search graph; empty means Model.
	QueryModel      string
	ReflectionModel string
	AnswerModel     string
	ResearchModel   string

	// InitialQueries is the most queries of the first round (and of each
	// follow-up round); MaxLoops the most reflections. Effort, when set,
	// has already been applied to both (see Load).
	InitialQueries int
	MaxLoops       int
	// Effort is the preset that was asked for ("low", "medium", "high"),
	// or "" for none.
	Effort string

	// Search is the search back end: ["auto"], ["gemini"], or an ordered
	// list of web providers ("searxng", "tavily", "brave").
	Search []string
	// Corpus is a directory of documents searched instead of the web.
	Corpus string
	// CorpusCacheDir is where corpus indexes live; "" means the default
	// under the user's cache directory.
	CorpusCacheDir string

	SearXNGURL    string
	TavilyAPIKey  Secret
	TavilyBaseURL string
	BraveAPIKey   Secret
	BraveBaseURL  string

	GeminiAPIKey     Secret
	GeminiBaseURL    string
	OpenAIAPIKey     Secret
	OpenAIBaseURL    string
	AnthropicAPIKey  Secret
	AnthropicBaseURL string
	OllamaHost       string

	// AllowPrivateURLs lets the page reader fetch loopback and private
	// addresses (self-hosted pages). Cloud-metadata addresses stay refused.
	AllowPrivateURLs bool
	// ResolveSources resolves Gemini's grounding redirects to the real
	// pages' URLs and titles (behind the same SSRF guard as page reading).
	ResolveSources bool
	// MaxConcurrency bounds the LLM requests in flight per provider,
	// SearchConcurrency the searches in flight per search provider, and
	// PageConcurrency the pages read at once; each is shared by every run
	// of the process, and 0 means no bound (the default). They are for
	// rate limits and memory, never for pacing one run: a bound below one
	// research round's fan-out is raised to it (see internal/app).
	MaxConcurrency int
	// ContextBudget bounds, in tokens, what reflection and the answer read
	// of the findings (research.Config.ContextBudget); 0 means the answer
	// model's default.
	ContextBudget int
	// ResearchBudget bounds, in tokens, each research (summary) prompt
	// (research.Config.ResearchBudget); 0 means derived from the queries
	// and loops (research.ResearchBudgetFor).
	ResearchBudget    int
	SearchConcurrency int
	PageConcurrency   int
	// LLMTimeout bounds one model call (retries included), SearchTimeout one
	// search, FetchTimeout one page read, Timeout the whole run (0: none).
	LLMTimeout    time.Duration
	SearchTimeout time.Duration
	FetchTimeout  time.Duration
	Timeout       time.Duration
	// MaxCost is the most a run may spend on model calls, in US dollars
	// (0: no limit); Prices override the built-in model prices (see
	// llm.PriceFor) per model spec.
	MaxCost float64
	Prices  llm.Prices
	// Retries is the retries after a failed request (429, 5xx, dropped
	// connections) to models and search providers.
	Retries int
	// RetryBackoff is the first wait before a retry (doubling after).
	RetryBackoff time.Duration
	// Format is the report format: "markdown" or "json".
	Format string
	// Store is where runs are kept: a SQLite file, a postgres:// DSN, or
	// StoreOff; "" means DefaultStore. StoreLocation resolves it.
	Store Store

	// MCPServers are the MCP servers of mcp_servers, in the file's order;
	// Agent.MCP selects among them (see SelectedMCPServers).
	MCPServers []MCPServer

	// Agent configures research agent.
	Agent Agent

	// Serve configures research serve.
	Serve Serve

	// Browser configures the browser tool (agent.browser).
	Browser Browser

	// File is the config file that was read, "" when none.
	File string

	sources map[string]Source
}

// Agent is the configuration of the research agent command.
type Agent struct {
	// Workspace is the directory the agent's file and exec tools are
	// confined to; "" means a new temporary directory per run.
	Workspace string
	// AllowExec enables python_execute and bash.
	AllowExec bool
	// MaxSteps bounds the agent's think steps.
	MaxSteps int
	// ToolTimeout bounds one tool call (python_execute and bash included).
	ToolTimeout time.Duration
	// Tools restricts the tools offered to the model; empty means all that
	// are available.
	Tools []string
	// DenyTools removes tools from those offered: names or patterns
	// (server.* for an MCP server's tools).
	DenyTools []string
	// ApproveTools makes each tool call with side effects (bash,
	// python_execute, the editor's writes, MCP tools not annotated
	// read-only) wait for a person's approval before it runs.
	ApproveTools bool
	// TextMode drives the model with a text ReAct protocol instead of
	// native tool calling.
	TextMode bool
	// Browser offers the browser tool: a headless Chromium (see Browser).
	Browser bool
	// MCP selects the MCP servers agent runs use: names of MCPServers and
	// ad-hoc servers ("NAME=COMMAND ARGS…", "NAME=https://URL"), or
	// ["none"]; empty means every server of MCPServers.
	MCP []string
}

// Serve is the configuration of the research serve command.
type Serve struct {
	// Addr is the address the server listens on; a loopback one unless
	// the user says otherwise.
	Addr string
	// Token is the bearer token API requests must carry; required off
	// loopback.
	Token Secret
	// CORSOrigins are the origins (scheme://host[:port]) other than the
	// server's own whose pages may call the API; none by default.
	CORSOrigins []string
	// MaxRunning bounds the runs executing at once; QueueSize the runs
	// waiting beyond them (more get 429).
	MaxRunning int
	QueueSize  int
	// MaxConnections bounds the connections the server holds open (0:
	// half the open-file limit); MaxConnectionsPerClient those of one
	// client address.
	MaxConnections          int
	MaxConnectionsPerClient int
	// ResumeInterrupted resumes, at start, the runs a stopped server left
	// running.
	ResumeInterrupted bool
	// Models are the model specs a run may ask for besides the configured
	// ones.
	Models []string
	// AllowAgent lets clients start agent runs.
	AllowAgent bool
	// Review makes research runs pause for their queries to be reviewed
	// unless a run's configuration says otherwise (config.configurable
	// review: false).
	Review bool
	// MaxBrowsers bounds the browsers (one per agent run with
	// agent.browser) running at once; more runs wait for one.
	MaxBrowsers int
}

// Browser is the configuration of the browser tool.
type Browser struct {
	// Chromium is the Chromium or Chrome executable; "" finds one.
	Chromium string
	// ActionTimeout bounds one browser action, page loads included.
	ActionTimeout time.Duration
	// MaxPages bounds the pages one run's browser loads; MaxTabs the tabs
	// open at once.
	MaxPages int
	MaxTabs  int
	// NoSandbox runs Chromium without its sandbox (for containers without
	// user namespaces; as root it always runs without).
	NoSandbox bool
}

// DefaultServeAddr is where research serve listens by default: loopback
// only.
const DefaultServeAddr = "127.0.0.1:8080"

// Values of the search key with a special meaning.
const (
	SearchAuto   = "auto"   // every provider whose variable is set
	SearchGemini = "gemini" // Gemini's Google Search grounding
)

// Web search providers the search key can list.
const (
	ProviderSearXNG = "searxng"
	ProviderTavily  = "tavily"
	ProviderBrave   = "brave"
)

// WebProviders lists the web search providers in the order "auto" tries
// them: a self-hosted SearXNG first, then the keyed APIs.
func WebProviders() []string { return []string{ProviderSearXNG, ProviderTavily, ProviderBrave} }

// StoreOff is the store value that keeps no runs.
const StoreOff = "off"

// Formats of the report.
const (
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// RoleModel returns the model spec of a role ("query", "research",
// "reflection", "answer", as llm.Role* name them), falling back to Model.
func (c *Config) RoleModel(role string) string {
	var m string
	switch role {
	case "query":
		m = c.QueryModel
	case "research":
		m = c.ResearchModel
	case "reflection":
		m = c.ReflectionModel
	case "answer":
		m = c.AnswerModel
	}
	if m == "" {
		return c.Model
	}
	return m
}

// Source returns where the value of key came from.
func (c *Config) Source(key string) Source {
	if s, ok := c.sources[key]; ok {
		return s
	}
	return Source{Kind: FromDefault}
}

// SetDefaultModel sets Model when no layer set it, recording why — for the
// default chosen from the keys present. It does nothing when Model is
// already set.
func (c *Config) SetDefaultModel(spec, why string) {
	if c.Model != "" || spec == "" {
		return
	}
	c.Model = spec
	c.setSource("model", Source{Kind: FromAuto, Name: why})
}

func (c *Config) setSource(key string, s Source) {
	if c.sources == nil {
		c.sources = map[string]Source{}
	}
	c.sources[key] = s
}

// SearchAuto reports whether the search key asks for auto-detection.
func (c *Config) SearchAuto() bool {
	return len(c.Search) == 0 || len(c.Search) == 1 && c.Search[0] == SearchAuto
}

// SearchGemini reports whether the search key asks for Gemini's Google
// Search grounding.
func (c *Config) SearchGemini() bool {
	return len(c.Search) == 1 && c.Search[0] == SearchGemini
}

// ConfiguredWebProviders returns the web providers whose URL or key is set,
// in the order "auto" tries them.
func (c *Config) ConfiguredWebProviders() []string {
	var out []string
	for _, p := range WebProviders() {
		if c.providerSet(p) {
			out = append(out, p)
		}
	}
	return out
}

func (c *Config) providerSet(p string) bool {
	switch p {
	case ProviderSearXNG:
		return c.SearXNGURL != ""
	case ProviderTavily:
		return c.TavilyAPIKey != ""
	case ProviderBrave:
		return c.BraveAPIKey != ""
	}
	return false
}

// ProviderVariable names the setting a web provider needs, as the user
// would set it: "SEARXNG_URL", "TAVILY_API_KEY", "BRAVE_API_KEY".
func ProviderVariable(p string) string {
	switch p {
	case ProviderSearXNG:
		return "SEARXNG_URL"
	case ProviderTavily:
		return "TAVILY_API_KEY"
	case ProviderBrave:
		return "BRAVE_API_KEY"
	}
	return ""
}

// Getenv returns the configured value of a provider's standard environment
// variable — GEMINI_API_KEY, GOOGLE_API_KEY, GOOGLE_GEMINI_BASE_URL,
// OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL,
// OLLAMA_HOST, SEARXNG_URL, TAVILY_API_KEY, BRAVE_API_KEY — as resolved from
// all layers, so provider constructors that read "the environment" see the
// configuration instead. Any other name returns "": the process environment
// is never consulted here.
//
// A key that came from one of several variables is returned under that
// variable only (a Gemini key from GOOGLE_API_KEY is not also
// GEMINI_API_KEY), so a rejected key is reported under the name the user set.
// A key from the config file or a DEEPGRAPH_ variable appears under the
// provider's preferred variable.
func (c *Config) Getenv(name string) string {
	for _, e := range table {
		if len(e.Env) < 2 {
			continue
		}
		std := e.Env[1:] // Env[0] is the DEEPGRAPH_ variable
		for i, v := range std {
			if v != name {
				continue
			}
			val := e.show(c)
			if e.Secret {
				val = e.secret(c).Reveal()
			}
			if val == "" {
				return ""
			}
			src := c.Source(e.Name)
			if src.Kind == FromEnv && contains(std, src.Name) {
				if src.Name == name {
					return val
				}
				return ""
			}
			if i == 0 {
				return val
			}
			return ""
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// SourceKind says which layer a value came from.
type SourceKind int

// The layers, lowest precedence first.
const (
	FromDefault SourceKind = iota // the documented default
	FromAuto                      // derived from other keys (the default model)
	FromFile                      // the config file
	FromEnv                       // an environment variable
	FromFlag                      // a command-line flag
	FromEffort                    // the effort preset (for queries and loops)
)

// Source is where a value came from: the layer, and the file, variable or
// flag that set it.
type Source struct {
	Kind SourceKind
	// Name is the file path, the variable or the flag ("--loops"); for
	// FromAuto and FromEffort, why the value was chosen.
	Name string
}

// String describes the source: "default", "file ~/.config/…", "env
// GEMINI_API_KEY", "flag --loops", "effort high (flag --effort)".
func (s Source) String() string {
	switch s.Kind {
	case FromAuto:
		return "auto: " + s.Name
	case FromFile:
		return "file " + s.Name
	case FromEnv:
		return "env " + s.Name
	case FromFlag:
		return "flag " + s.Name
	case FromEffort:
		return "effort " + s.Name
	}
	return "default"
}

// rank orders sources by precedence for the effort rule.
func (s Source) rank() int {
	switch s.Kind {
	case FromFile:
		return 1
	case FromEnv:
		return 2
	case FromFlag:
		return 3
	}
	return 0
}

// Secret is a credential. It prints as "[redacted]" with fmt and slog, so it
// cannot leak by accident; Reveal returns the value for the one place that
// needs it (the request header).
type Secret string

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer without revealing the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer without revealing the value.
func (s Secret) GoString() string { return fmt.Sprintf("config.Secret(%q)", s.String()) }

// LogValue implements slog.LogValuer without revealing the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText implements encoding.TextMarshaler without revealing the
// value, so encoding a Config as JSON or YAML cannot leak it either.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Secrets returns every secret value of the configuration — API keys, a
// store DSN's password, MCP servers' env values and headers — for masking
// in output.
func (c *Config) Secrets() []string {
	var out []string
	for _, s := range []Secret{c.GeminiAPIKey, c.OpenAIAPIKey, c.AnthropicAPIKey, c.TavilyAPIKey, c.BraveAPIKey} {
		if v := s.Reveal(); v != "" {
			out = append(out, v)
		}
	}
	out = append(out, c.mcpSecrets()...)
	if u, err := url.Parse(c.Store.Reveal()); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = append(out, pw)
		}
	}
	return out
}

// StoreLocation is where runs are kept, to open the store: the store key
// (revealed: a DSN with its password), or DefaultStore when it is empty; ""
// when the store is off.
func (c *Config) StoreLocation() (string, error) {
	switch c.Store {
	case StoreOff:
		return "", nil
	case "":
		return DefaultStore()
	}
	return c.Store.Reveal(), nil
}

// Store is where runs are kept: a SQLite file path, a postgres:// DSN or
// StoreOff. A DSN may hold a password, so a Store prints — with fmt, slog,
// JSON or YAML — as RedactDSN shows it; Reveal returns it whole, for
// opening the store.
type Store string

// Reveal returns the location with its password.
func (s Store) Reveal() string { return string(s) }

// String implements fmt.Stringer without the password.
func (s Store) String() string { return RedactDSN(string(s)) }

// GoString implements fmt.GoStringer without the password.
func (s Store) GoString() string { return fmt.Sprintf("config.Store(%q)", s.String()) }

// LogValue implements slog.LogValuer without the password.
func (s Store) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText implements encoding.TextMarshaler without the password.
func (s Store) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// IsPostgres reports whether a store location is a PostgreSQL DSN.
func IsPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// RedactDSN returns a store location fit to print: a DSN's password
// replaced by "xxxxx".
func RedactDSN(store string) string {
	u, err := url.Parse(store)
	if err != nil || u.User == nil {
		return store
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// Entry is one key of a Config for display: its value (secrets redacted)
// and where it came from.
type Entry struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Redacted lists every key with its effective value and source, in the
// table's order. Secrets never appear: a set secret shows as
// "set (from GEMINI_API_KEY)", an unset one as "not set".
func (c *Config) Redacted() []Entry {
	out := make([]Entry, 0, len(table))
	for _, e := range table {
		src := c.Source(e.Name)
		val := e.show(c)
		if e.Secret {
			if e.secret(c) == "" {
				val = "not set"
			} else {
				val = "set (" + secretOrigin(src) + ")"
			}
		} else if val == "" {
			val = e.emptyText()
		}
		out = append(out, Entry{Key: e.Name, Value: val, Source: src.String()})
	}
	return out
}

func secretOrigin(s Source) string {
	switch s.Kind {
	case FromEnv:
		return "from " + s.Name
	case FromFlag:
		return "from " + s.Name
	case FromFile:
		return "in " + s.Name
	}
	return "default"
}

// String renders the redacted configuration as an aligned table.
func (c *Config) String() string {
	entries := c.Redacted()
	w := 0
	for _, e := range entries {
		w = max(w, len(e.Key))
	}
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%-*s  %s", w, e.Key, e.Value)
		if e.Source != "default" && !strings.HasPrefix(e.Value, "set (") {
			fmt.Fprintf(&b, "  (%s)", e.Source)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
