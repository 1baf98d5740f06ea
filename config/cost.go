package config

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/deepgraph/deepgraph/llm"
)

// MaxCostLimit bounds max_cost, in US dollars.
const MaxCostLimit = 1_000_000

// --- the keys -----------------------------------------------------------

func maxCostKey() entry {
	const allowed = "0 (no limit) or an amount of US dollars, like 0.50"
	return entry{
		Key: Key{Name: "max_cost", Default: "0 (no limit)", Flag: "--max-cost",
			Help: "Most a run may spend on model calls, in US dollars, priced with the prices table: before each model call the run stops " +
				"(report marked incomplete, exit 1) once what its calls so far cost has reached the limit; calls already in flight finish. " +
				"Every model of the run needs a known price (see prices)."},
		set: func(c *Config, v any) error {
			if s, isText := v.(string); v == nil || isText && strings.TrimSpace(s) == "" {
				c.MaxCost = 0
				return nil
			}
			f, ok := asFloat(v)
			if !ok || f < 0 || f > MaxCostLimit || math.IsNaN(f) {
				return allowedError{allowed, nil}
			}
			c.MaxCost = f
			return nil
		},
		show: func(c *Config) string {
			if c.MaxCost == 0 {
				return ""
			}
			return strconv.FormatFloat(c.MaxCost, 'f', -1, 64)
		},
		empty: "0 (no limit)",
		kind:  "string",
	}
}

func pricesKey() entry {
	return entry{
		Key: Key{Name: "prices", Default: "built in (list prices as of " + llm.PricesAsOf + ")",
			Help: "Model prices in US dollars per million tokens that win over the built-in table: a map of model spec to input, output, cached_input (prompt tokens read from the provider's cache) " +
				"and cache_write (prompt tokens written to it; Anthropic charges more for them), " +
				"e.g. openai:gpt-4.1-mini: {input: 0.4, output: 1.6, cached_input: 0.1}; left out, cached_input and cache_write are the input price. A compatible: model has no price until it is given here; ollama: models are free. " +
				"In a DEEPGRAPH_ variable: the map as JSON."},
		set: func(c *Config, v any) error {
			p, err := parsePrices(v)
			if err != nil {
				return err
			}
			c.Prices = p
			return nil
		},
		show: func(c *Config) string {
			specs := make([]string, 0, len(c.Prices))
			for s := range c.Prices {
				specs = append(specs, s)
			}
			slices.Sort(specs)
			parts := make([]string, len(specs))
			for i, s := range specs {
				p := c.Prices[s]
				parts[i] = fmt.Sprintf("%s {input: %g, output: %g, cached_input: %g, cache_write: %g}", s, p.Input, p.Output, p.CachedInput, p.CacheWrite)
			}
			return strings.Join(parts, ", ")
		},
		empty: "built in",
		raw:   true,
	}
}

// parsePrices reads prices: a map of spec to {input, output, cached_input,
// cache_write}
// (from a file), or its JSON (from a variable).
func parsePrices(v any) (llm.Prices, error) {
	const allowed = "a map of model spec to prices per million tokens, like openai:gpt-4.1-mini: {input: 0.4, output: 1.6, cached_input: 0.1}"
	if s, ok := v.(string); ok {
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return nil, allowedError{`a JSON object like {"openai:gpt-4.1-mini":{"input":0.4,"output":1.6,"cached_input":0.1}}`, nil}
		}
		v = m
	}
	if v == nil {
		return nil, nil
	}
	m, ok := asMap(v)
	if !ok {
		return nil, allowedError{allowed, nil}
	}
	out := llm.Prices{}
	var errs mcpErrors
	for _, spec := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		label := "prices[" + spec + "]"
		if _, _, err := llm.ParseSpec(spec); err != nil {
			errs = append(errs, &Error{Key: label, Value: spec, Allowed: "a model spec provider:model, like openai:gpt-4.1-mini"})
			continue
		}
		fields, ok := asMap(m[spec])
		if !ok {
			errs = append(errs, &Error{Key: label, Value: fmt.Sprint(m[spec]), Allowed: "input, output, cached_input and cache_write in US dollars per million tokens"})
			continue
		}
		var p llm.Price
		for name, val := range fields {
			f, ok := asFloat(val)
			var dst *float64
			switch name {
			case "input":
				dst = &p.Input
			case "output":
				dst = &p.Output
			case "cached_input":
				dst = &p.CachedInput
			case "cache_write":
				dst = &p.CacheWrite
			default:
				errs = append(errs, &Error{Key: label + "." + name, Value: fmt.Sprint(val), Allowed: "only input, output, cached_input and cache_write"})
				continue
			}
			if !ok || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
				errs = append(errs, &Error{Key: label + "." + name, Value: fmt.Sprint(val), Allowed: "a price of 0 or more US dollars per million tokens"})
				continue
			}
			*dst = f
		}
		if _, has := fields["cached_input"]; !has {
			p.CachedInput = p.Input // no cache discount unless one is given
		}
		if _, has := fields["cache_write"]; !has {
			p.CacheWrite = p.Input // no cache-write surcharge unless one is given
		}
		out[spec] = p
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// asFloat reads a number written in a file (int or float) or as text.
func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(x), "$"), 64)
		return f, err == nil
	}
	return 0, false
}
