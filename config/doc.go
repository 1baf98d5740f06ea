// Package config is the typed, validated configuration of the research
// command: which models to use per role, how wide and deep to research, which
// search back end, the providers' keys and endpoints, limits and timeouts,
// and the agent's settings.
//
// # Layers
//
// A Loader resolves every key from four layers, each overriding the one
// before:
//
//  1. the defaults of the key table (Keys — the one place they are written
//     down; `research config keys` prints it);
//  2. the config file: --config FILE, else $DEEPGRAPH_CONFIG, else
//     <user config dir>/deepgraph/config.yaml ($XDG_CONFIG_HOME or
//     ~/.config on Linux) if it exists — YAML, JSON or TOML, keys in
//     snake_case, the agent's keys under "agent:";
//  3. the environment: DEEPGRAPH_<KEY> (DEEPGRAPH_AGENT_WORKSPACE for
//     agent.workspace), then the providers' standard variables —
//     GEMINI_API_KEY or GOOGLE_API_KEY, GOOGLE_GEMINI_BASE_URL,
//     OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL,
//     OLLAMA_HOST, SEARXNG_URL, TAVILY_API_KEY, BRAVE_API_KEY;
//  4. command-line flags, when given.
//
// Loading is strict: a value that does not fit is an *Error naming the key,
// the value, what is allowed and where the value came from
// ("max_research_loops: -1 is not allowed: use a whole number from 1 to 50
// (from flag --loops)"); a key in the file that no setting has is an
// *UnknownKeyError naming the file and the closest known key. Every problem is
// reported at once, and all match ErrInvalid.
//
// The effort preset (low, medium, high) sets number_of_initial_queries and
// max_research_loops unless those are set on a layer at least as high as the
// effort itself: `--effort high --queries 2` searches 2 queries per round over
// up to 10 loops.
//
// # Secrets
//
// API keys are Secret values: they print as "[redacted]" through fmt, slog
// and JSON, and Redacted (what `research config` shows) reports them as
// "set (from GEMINI_API_KEY)". Error messages never include them. The store
// key is a Store: a postgres:// DSN in it prints everywhere — fmt, slog,
// JSON, Redacted, errors — with its password replaced by "xxxxx"; Reveal
// and StoreLocation give it whole, to open the store.
//
// # Providers
//
// Config.Getenv answers provider constructors that read "the environment"
// with the configured values instead, so the file, DEEPGRAPH_ variables and
// flags reach them, and a key is reported under the variable the user set.
//
// # Example
//
//	cfg, err := config.Loader{File: configFlag, Flags: cmd.Flags()}.Load()
//	if err != nil {
//		return err // every line names a key; errors.Is(err, config.ErrInvalid)
//	}
//	fmt.Print(cfg) // the effective configuration, secrets redacted, with sources
package config
