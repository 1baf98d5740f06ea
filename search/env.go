package search

import (
	"fmt"
	"os"
	"strings"
)

// providerEnv maps each web provider to the variable it is configured by.
var providerEnv = map[string]string{
	"searxng": EnvSearXNGURL,
	"tavily":  EnvTavilyAPIKey,
	"brave":   EnvBraveAPIKey,
}

// ProviderNames lists the web providers ProviderFromEnv knows, in the
// order a default chain tries them: a self-hosted SearXNG first (free,
// private), then the keyed APIs.
func ProviderNames() []string { return []string{"searxng", "tavily", "brave"} }

// ProviderFromEnv builds the named provider ("searxng", "tavily" or
// "brave") from its environment variable (SEARXNG_URL, TAVILY_API_KEY,
// BRAVE_API_KEY) with the given transport options. A missing variable is
// an error that names it and matches ErrNotConfigured.
func ProviderFromEnv(name string, opts HTTPOptions) (Searcher, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "searxng":
		return SearXNGFromEnv(SearXNGConfig{HTTPOptions: opts})
	case "tavily":
		return TavilyFromEnv(TavilyConfig{HTTPOptions: opts})
	case "brave":
		return BraveFromEnv(BraveConfig{HTTPOptions: opts})
	}
	return nil, fmt.Errorf("search: unknown provider %q; want one of %s: %w", name, strings.Join(ProviderNames(), ", "), ErrNotConfigured)
}

// ChainFromEnv builds a Chain of the named providers (all of
// ProviderNames when none is given), in order, from their environment
// variables. Providers whose variable is unset are left out; if none is
// left, the error names every variable it looked for. A variable that is
// set but unusable (a malformed URL) is an error, not a silent skip.
func ChainFromEnv(opts HTTPOptions, names ...string) (*Chain, error) {
	if len(names) == 0 {
		names = ProviderNames()
	}
	var providers []Searcher
	var unset []string
	for _, n := range names {
		key := strings.ToLower(strings.TrimSpace(n))
		if env, known := providerEnv[key]; known && strings.TrimSpace(os.Getenv(env)) == "" {
			unset = append(unset, env)
			continue
		}
		p, err := ProviderFromEnv(key, opts)
		if err != nil {
			return nil, err
		}
		providers = append(providers, p)
	}
	if len(providers) == 0 {
		return nil, fmt.Errorf("search: no web search provider is configured; set one of %s: %w", strings.Join(unset, ", "), ErrNotConfigured)
	}
	return NewChain(providers...), nil
}
