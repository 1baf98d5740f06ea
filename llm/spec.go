package llm

import (
	"errors"
	"fmt"
	"strings"
)

// Providers, as named in model specs ("provider:model").
const (
	ProviderGemini    = "gemini"    // Google Gemini API (llm/gemini)
	ProviderOpenAI    = "openai"    // OpenAI (llm/openai)
	ProviderAnthropic = "anthropic" // Anthropic (llm/anthropic)
	ProviderOllama    = "ollama"    // Ollama through its OpenAI-compatible /v1 endpoint
	// ProviderCompatible is any other OpenAI-compatible endpoint (vLLM,
	// llama.cpp server, LM Studio, OpenRouter, DeepSeek, …); it needs a base
	// URL from the configuration.
	ProviderCompatible = "compatible"
)

// canonicalProvider maps an accepted spelling (any case) to its provider
// name; "" when unknown.
func canonicalProvider(name string) string {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case ProviderGemini, "google":
		return ProviderGemini
	case ProviderOpenAI:
		return ProviderOpenAI
	case ProviderAnthropic, "claude":
		return ProviderAnthropic
	case ProviderOllama:
		return ProviderOllama
	case ProviderCompatible, "openai-compatible":
		return ProviderCompatible
	}
	return ""
}

// Providers returns the provider names a spec may start with, in the order
// the documentation lists them.
func Providers() []string {
	return []string{ProviderGemini, ProviderOpenAI, ProviderAnthropic, ProviderOllama, ProviderCompatible}
}

// ErrInvalidSpec matches every error of ParseSpec.
var ErrInvalidSpec = errors.New("invalid model spec")

// specForms is the help text listing the accepted spec forms.
const specForms = "write provider:model, e.g. gemini:gemini-2.5-flash, openai:gpt-4.1-mini, " +
	"anthropic:claude-sonnet-4-5, ollama:qwen3:8b or compatible:<model> (with a base URL configured); " +
	"providers: gemini (alias google), openai, anthropic (alias claude), ollama, compatible (alias openai-compatible)"

// ParseSpec splits a model spec "provider:model" at its first colon, so
// "ollama:qwen3:8b" is ("ollama", "qwen3:8b"). The provider is matched
// case-insensitively, aliases ("google", "claude", "openai-compatible") are
// returned as the canonical name, and the model name is kept as written
// (trimmed). An empty spec matches ErrNoModel; every error matches
// ErrInvalidSpec and lists the accepted forms.
//
// Mapping a provider to its constructor is not done here: provider
// packages import llm, so that lives in package llm/providers.
func ParseSpec(spec string) (provider, model string, err error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return "", "", fmt.Errorf("%w: %w: the spec is empty; %s", ErrInvalidSpec, ErrNoModel, specForms)
	}
	prefix, name, ok := strings.Cut(s, ":")
	if !ok {
		hint := ""
		if before, after, found := strings.Cut(s, "/"); found && canonicalProvider(before) != "" {
			hint = fmt.Sprintf(" (did you mean %s:%s?)", canonicalProvider(before), after)
		} else if p := guessProvider(s); p != "" {
			hint = fmt.Sprintf(" (did you mean %s:%s?)", p, s)
		}
		return "", "", fmt.Errorf("%w %q: no provider prefix%s; %s", ErrInvalidSpec, spec, hint, specForms)
	}
	provider = canonicalProvider(prefix)
	if provider == "" {
		return "", "", fmt.Errorf("%w %q: unknown provider %q; %s", ErrInvalidSpec, spec, prefix, specForms)
	}
	model = strings.TrimSpace(name)
	if model == "" {
		return "", "", fmt.Errorf("%w %q: no model name after %q; %s", ErrInvalidSpec, spec, prefix+":", specForms)
	}
	return provider, model, nil
}

// guessProvider names the provider a bare model name most likely belongs
// to, for the error hint; "" when unsure.
func guessProvider(model string) string {
	m := strings.ToLower(model)
	switch {
	case strings.HasPrefix(m, "gemini"):
		return ProviderGemini
	case strings.HasPrefix(m, "gpt-") || strings.HasPrefix(m, "o1") || strings.HasPrefix(m, "o3") || strings.HasPrefix(m, "o4"):
		return ProviderOpenAI
	case strings.HasPrefix(m, "claude"):
		return ProviderAnthropic
	}
	return ""
}
