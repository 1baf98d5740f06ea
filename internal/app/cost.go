package app

import (
	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
)

// CostDoc is what a run's model calls cost, in US dollars, in the JSON
// documents. A role whose model has no known price has usd null and price
// "unknown", is listed in Unknown, and makes TotalUSD null: an unknown
// price is never counted as 0.
type CostDoc struct {
	Currency string `json:"currency"` // "USD"
	// TotalUSD is the sum over the roles; null when some role's price is
	// unknown (KnownUSD is then the sum of the others).
	TotalUSD *float64               `json:"total_usd"`
	KnownUSD float64                `json:"known_usd"`
	ByRole   map[string]RoleCostDoc `json:"by_role"`
	Unknown  []string               `json:"unknown,omitempty"`
	// PricesAsOf is the date of the built-in prices (llm.PricesAsOf); the
	// config file's prices key overrides them.
	PricesAsOf string `json:"prices_as_of"`
}

// RoleCostDoc is the cost of one role's calls.
type RoleCostDoc struct {
	Model string   `json:"model"`
	USD   *float64 `json:"usd"`
	Price string   `json:"price,omitempty"` // "unknown" when the model's price is
}

// CostOf is the CostDoc of usage, each role priced at its model in models
// (research roles; compaction uses the reflection model's price, as
// research does by default), with prices overriding the built-in table.
func CostOf(usage llm.UsageByRole, models map[string]string, prices llm.Prices) CostDoc {
	c := prices.CostOf(usage, func(role string) string { return roleSpec(models, role) })
	doc := CostDoc{Currency: "USD", ByRole: map[string]RoleCostDoc{}, Unknown: c.Unknown, PricesAsOf: llm.PricesAsOf}
	for role, rc := range c.ByRole {
		d := RoleCostDoc{Model: rc.Model}
		if rc.Known {
			usd := rc.USD
			d.USD = &usd
		} else {
			d.Price = "unknown"
		}
		doc.ByRole[role] = d
	}
	total, ok := c.Total()
	doc.KnownUSD = total
	if ok {
		doc.TotalUSD = &total
	}
	return doc
}

// CostText is a run's cost as the timeline shows it ("$0.0123", "unknown",
// "$0.0100 + unknown (compatible:x)").
func CostText(usage llm.UsageByRole, models map[string]string, prices llm.Prices) string {
	return prices.CostOf(usage, func(role string) string { return roleSpec(models, role) }).String()
}

// CostUSD is a run's total cost in US dollars as its record keeps it
// (runstore.Run.Cost): nil when some role's price is unknown, never 0 for
// unknown. Roles are priced as CostOf prices them.
func CostUSD(usage llm.UsageByRole, models map[string]string, prices llm.Prices) *float64 {
	total, ok := prices.CostOf(usage, func(role string) string { return roleSpec(models, role) }).Total()
	if !ok {
		return nil
	}
	return &total
}

// roleSpec is the model spec of a role in models: its own, the reflection
// model's for compaction, the only model's for a run of one model (the
// agent's roles).
func roleSpec(models map[string]string, role string) string {
	if s, ok := models[role]; ok {
		return s
	}
	if role == research.RoleCompaction {
		if s, ok := models[llm.RoleReflection]; ok {
			return s
		}
	}
	if len(models) == 1 {
		for _, s := range models {
			return s
		}
	}
	return ""
}

// costLimit wraps the models of a run in llm.CostLimited sharing one
// llm.Spend of cfg.MaxCost, by spec; nil when no limit is set. A model
// without a known price cannot be limited: that is a setup error.
func costLimit(cfg *config.Config, specs map[string]string, models map[string]llm.Model) error {
	if cfg.MaxCost <= 0 {
		return nil
	}
	spend := &llm.Spend{Limit: cfg.MaxCost}
	wrapped := map[llm.Model]llm.Model{}
	for role, m := range models {
		spec := specs[role]
		price, ok := cfg.Prices.For(spec)
		if !ok {
			return setupErr("max_cost needs the price of every model of the run, and %s (role %s) has none: give it in the config file's prices key, "+
				"e.g. prices: {%q: {input: 0.5, output: 1.5, cached_input: 0.5}} (US dollars per million tokens), or drop max_cost", spec, role, spec)
		}
		if w, ok := wrapped[m]; ok {
			models[role] = w
			continue
		}
		w := llm.CostLimited(m, spend, price)
		wrapped[m], models[role] = w, w
	}
	return nil
}
