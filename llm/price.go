package llm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/schemas"
)

// PricesAsOf is the date of the list prices in the built-in table. Prices
// change: override them with Prices (the config file's prices key).
const PricesAsOf = "2025-10-01"

// Price is what a model charges, in US dollars per million tokens. The
// zero Price is free (a local model).
type Price struct {
	// Input is the price of prompt tokens not read from a cache.
	Input float64 `json:"input"`
	// Output is the price of completion tokens, thinking tokens included.
	Output float64 `json:"output"`
	// CachedInput is the price of prompt tokens read from the provider's
	// cache (Usage.CachedTokens).
	CachedInput float64 `json:"cached_input"`
	// CacheWrite is the price of prompt tokens written to the provider's
	// cache (Usage.CacheWriteTokens): Anthropic charges 1.25 × Input for its
	// five-minute cache; OpenAI and Gemini's implicit caches write for free,
	// at Input.
	CacheWrite float64 `json:"cache_write"`
}

// Cost is what one usage costs at p, in US dollars:
//
//	(prompt − cached − written) × Input + cached × CachedInput
//	  + written × CacheWrite + output × Output, per million
//
// where written is the prompt tokens written to the cache, and output is the
// completion tokens, or total − prompt when the provider's total counts more
// (Gemini reports thinking tokens outside the completion count; OpenAI
// counts them inside it).
func (p Price) Cost(u Usage) float64 {
	prompt := max(u.PromptTokens, 0)
	cached := min(max(u.CachedTokens, 0), prompt)
	written := min(max(u.CacheWriteTokens, 0), prompt-cached)
	uncached := prompt - cached - written
	output := max(u.CompletionTokens, u.TotalTokens-u.PromptTokens, 0)
	return (float64(uncached)*p.Input + float64(cached)*p.CachedInput + float64(written)*p.CacheWrite + float64(output)*p.Output) / 1e6
}

// builtinPrices are the list prices of the providers' default models and
// a few siblings, per model name (without the provider), as of PricesAsOf.
// Gemini 2.5 Pro's price is for prompts up to 200k tokens. Cache writes:
// Anthropic's five-minute cache at 1.25 × input; OpenAI's and Gemini's
// implicit caches cost nothing extra to fill (plain input).
var builtinPrices = map[string]map[string]Price{
	ProviderGemini: {
		"gemini-2.5-flash":      {Input: 0.30, Output: 2.50, CachedInput: 0.03, CacheWrite: 0.3},
		"gemini-2.5-flash-lite": {Input: 0.10, Output: 0.40, CachedInput: 0.01, CacheWrite: 0.1},
		"gemini-2.5-pro":        {Input: 1.25, Output: 10.00, CachedInput: 0.125, CacheWrite: 1.25},
		"gemini-2.0-flash":      {Input: 0.10, Output: 0.40, CachedInput: 0.025, CacheWrite: 0.1},
	},
	ProviderOpenAI: {
		"gpt-4.1":      {Input: 2.00, Output: 8.00, CachedInput: 0.50, CacheWrite: 2},
		"gpt-4.1-mini": {Input: 0.40, Output: 1.60, CachedInput: 0.10, CacheWrite: 0.4},
		"gpt-4.1-nano": {Input: 0.10, Output: 0.40, CachedInput: 0.025, CacheWrite: 0.1},
		"gpt-4o":       {Input: 2.50, Output: 10.00, CachedInput: 1.25, CacheWrite: 2.5},
		"gpt-4o-mini":  {Input: 0.15, Output: 0.60, CachedInput: 0.075, CacheWrite: 0.15},
		"o4-mini":      {Input: 1.10, Output: 4.40, CachedInput: 0.275, CacheWrite: 1.1},
		"gpt-5":        {Input: 1.25, Output: 10.00, CachedInput: 0.125, CacheWrite: 1.25},
		"gpt-5-mini":   {Input: 0.25, Output: 2.00, CachedInput: 0.025, CacheWrite: 0.25},
	},
	ProviderAnthropic: {
		"claude-sonnet-4-5": {Input: 3.00, Output: 15.00, CachedInput: 0.30, CacheWrite: 3.75},
		"claude-sonnet-4-0": {Input: 3.00, Output: 15.00, CachedInput: 0.30, CacheWrite: 3.75},
		"claude-haiku-4-5":  {Input: 1.00, Output: 5.00, CachedInput: 0.10, CacheWrite: 1.25},
		"claude-opus-4-1":   {Input: 15.00, Output: 75.00, CachedInput: 1.50, CacheWrite: 18.75},
	},
}

// snapshotSuffix is a dated or -latest suffix of a model name
// (gpt-4.1-mini-2025-04-14, claude-sonnet-4-5-20250929).
var snapshotSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$`) })

// PriceFor is the built-in price of a model spec ("provider:model"): the
// list price of a known model of Gemini, OpenAI or Anthropic (a dated
// snapshot of it too), and zero for every ollama: model, which runs
// locally. It reports false for any other model, compatible: ones
// included: their price is unknown, not zero.
func PriceFor(spec string) (Price, bool) {
	provider, model, err := ParseSpec(spec)
	if err != nil {
		return Price{}, false
	}
	if provider == ProviderOllama {
		return Price{}, true
	}
	table := builtinPrices[provider]
	model = strings.ToLower(model)
	if p, ok := table[model]; ok {
		return p, true
	}
	p, ok := table[snapshotSuffix().ReplaceAllString(model, "")]
	return p, ok
}

// Prices are prices per model spec that win over the built-in table (the
// config file's prices key). Specs are matched as ParseSpec reads them, so
// "google:gemini-2.5-flash" overrides gemini:gemini-2.5-flash.
type Prices map[string]Price

// For is the price of spec: its override in p, else PriceFor.
func (p Prices) For(spec string) (Price, bool) {
	if len(p) > 0 {
		want := canonicalSpec(spec)
		for s, price := range p {
			if canonicalSpec(s) == want {
				return price, true
			}
		}
	}
	return PriceFor(spec)
}

// canonicalSpec is spec with its provider's canonical name.
func canonicalSpec(spec string) string {
	provider, model, err := ParseSpec(spec)
	if err != nil {
		return strings.TrimSpace(spec)
	}
	return provider + ":" + model
}

// RoleCost is what the calls of one role cost.
type RoleCost struct {
	Model string // the model spec of the role
	USD   float64
	Known bool // false when the model's price is unknown (USD is then 0 and meaningless)
}

// RunCost is what a run's model calls cost, per role, in US dollars.
type RunCost struct {
	ByRole map[string]RoleCost
	// Unknown are the roles (sorted) that made calls with a model whose
	// price is unknown.
	Unknown []string
}

// Total is the sum over the roles; ok is false when some role's price is
// unknown, and the sum then covers only the others.
func (c RunCost) Total() (usd float64, ok bool) {
	for _, role := range slices.Sorted(maps.Keys(c.ByRole)) {
		usd += c.ByRole[role].USD
	}
	return usd, len(c.Unknown) == 0
}

// String is the cost as the CLI shows it: "$0.0123", "unknown" when no
// role's price is known, or "$0.0123 + unknown (compatible:x)".
func (c RunCost) String() string {
	usd, ok := c.Total()
	if ok {
		return USD(usd)
	}
	var models []string
	for _, role := range c.Unknown {
		if m := c.ByRole[role].Model; m != "" && !slices.Contains(models, m) {
			models = append(models, m)
		}
	}
	what := "unknown"
	if len(models) > 0 {
		what += " (" + strings.Join(models, ", ") + ")"
	}
	if len(c.Unknown) == len(c.ByRole) {
		return what
	}
	return USD(usd) + " + " + what
}

// USD formats an amount of dollars: four decimals below $1, two above.
func USD(v float64) string {
	if v < 1 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// CostOf prices usage: each role's calls at the price of its model,
// modelOf(role) (an empty spec is unknown). Roles without calls are left
// out.
func (p Prices) CostOf(usage UsageByRole, modelOf func(role string) string) RunCost {
	c := RunCost{ByRole: map[string]RoleCost{}}
	for _, role := range usage.Roles() {
		t := usage[role]
		if t.Calls == 0 && t.Usage == (Usage{}) {
			continue
		}
		spec := modelOf(role)
		price, ok := Price{}, false
		if spec != "" {
			price, ok = p.For(spec)
		}
		rc := RoleCost{Model: spec, Known: ok}
		if ok {
			rc.USD = price.Cost(t.Usage)
		} else {
			c.Unknown = append(c.Unknown, role)
		}
		c.ByRole[role] = rc
	}
	return c
}

// ErrCostLimit matches the error of a call refused because the run has
// spent its cost limit (CostLimited).
var ErrCostLimit = errors.New("cost limit reached")

// CostLimitError is the error of a call CostLimited refused.
type CostLimitError struct {
	Spent, Limit float64 // US dollars
}

func (e *CostLimitError) Error() string {
	return fmt.Sprintf("cost limit reached: the run has spent %s of its %s limit (max_cost / --max-cost); "+
		"raise the limit to let it go on", USD(e.Spent), USD(e.Limit))
}

// Is matches ErrCostLimit.
func (e *CostLimitError) Is(target error) bool { return target == ErrCostLimit }

// Spend adds up what the model calls of one run cost, against a limit in
// US dollars. It is safe for concurrent use; share one per run among the
// models CostLimited wraps.
type Spend struct {
	Limit float64 // US dollars; 0 means none

	mu  sync.Mutex
	usd float64
}

// Spent is what the calls recorded so far cost.
func (s *Spend) Spent() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usd
}

// add records usd.
func (s *Spend) add(usd float64) {
	s.mu.Lock()
	s.usd += usd
	s.mu.Unlock()
}

// check is the error of a call when the spend has reached the limit.
func (s *Spend) check() error {
	if s.Limit <= 0 {
		return nil
	}
	if spent := s.Spent(); spent >= s.Limit {
		return &CostLimitError{Spent: spent, Limit: s.Limit}
	}
	return nil
}

// CostLimited wraps m, priced at price, so that every call's tokens —
// those a failed call reported too (APIError.Usage) — are added to spend,
// and a call is refused with a *CostLimitError (matching ErrCostLimit)
// once spend has reached its limit. The check is made before each call
// against what the calls before it cost; calls already in flight finish,
// so a run can end above the limit by what its last calls cost. A nil
// spend returns m unchanged.
func CostLimited(m Model, spend *Spend, price Price) Model {
	if spend == nil || m == nil {
		return m
	}
	return &costLimited{m: m, spend: spend, price: price}
}

type costLimited struct {
	m     Model
	spend *Spend
	price Price
}

func (c *costLimited) Generate(ctx context.Context, msgs []schemas.Message, opts ...Option) (*Response, error) {
	if err := c.spend.check(); err != nil {
		return nil, err
	}
	resp, err := c.m.Generate(ctx, msgs, opts...)
	c.spend.add(c.price.Cost(callUsage(resp, err)))
	return resp, err
}

// callUsage is the tokens a call reported: its Response's, or those of its
// APIError when it failed.
func callUsage(resp *Response, err error) Usage {
	if resp != nil {
		return resp.Usage
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Usage
	}
	return Usage{}
}
