package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

func TestMaxCost(t *testing.T) {
	l := isolate(t)
	c, err := l.Load()
	require.NoError(t, err)
	assert.Zero(t, c.MaxCost, "no limit by default")

	for _, in := range []string{"0.50", "$0.50", ".5"} {
		l := isolate(t)
		c, err := l.withFlags(t, "--max-cost", in).Load()
		require.NoError(t, err, in)
		assert.Equal(t, 0.5, c.MaxCost, in)
	}
	l = isolate(t)
	l.File = writeFile(t, "config.yaml", "max_cost: 2\n")
	c, err = l.Load()
	require.NoError(t, err)
	assert.Equal(t, 2.0, c.MaxCost, "a whole number in a file")

	for _, in := range []string{"-1", "lots", "NaN"} {
		l := isolate(t)
		_, err := l.withFlags(t, "--max-cost", in).Load()
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), "0 (no limit) or an amount of US dollars", in)
	}
}

func TestPrices(t *testing.T) {
	l := isolate(t)
	l.File = writeFile(t, "config.yaml", `
prices:
  openai:gpt-4.1-mini: {input: 0.5, output: 2, cached_input: 0.25}
  compatible:DeepSeek-Chat: {input: 0.27, output: 1.1}
`)
	c, err := l.Load()
	require.NoError(t, err)
	assert.Equal(t, llm.Prices{
		"openai:gpt-4.1-mini":      {Input: 0.5, Output: 2, CachedInput: 0.25, CacheWrite: 0.5},
		"compatible:DeepSeek-Chat": {Input: 0.27, Output: 1.1, CachedInput: 0.27, CacheWrite: 0.27},
	}, c.Prices, "specs keep their case; no cached_input means no cache discount, no cache_write no surcharge")
	p, ok := c.Prices.For("openai:gpt-4.1-mini")
	require.True(t, ok)
	assert.Equal(t, 0.5, p.Input, "the file's price wins over the built-in one")

	t.Run("env JSON", func(t *testing.T) {
		l := isolate(t)
		t.Setenv("DEEPGRAPH_PRICES", `{"compatible:x":{"input":1,"output":2,"cached_input":0.5,"cache_write":1.25}}`)
		c, err := l.Load()
		require.NoError(t, err)
		assert.Equal(t, llm.Prices{"compatible:x": {Input: 1, Output: 2, CachedInput: 0.5, CacheWrite: 1.25}}, c.Prices)
	})

	for want, file := range map[string]string{
		"prices[gpt-4.1]":               "prices:\n  gpt-4.1: {input: 1, output: 1}\n",
		"prices[openai:gpt-4.1].inptu":  "prices:\n  openai:gpt-4.1: {inptu: 1, output: 1}\n",
		"prices[openai:gpt-4.1].output": "prices:\n  openai:gpt-4.1: {input: 1, output: -3}\n",
		"a map of model spec":           "prices: [1, 2]\n",
		"prices[openai:gpt-4.1]":        "prices:\n  openai:gpt-4.1: 3\n",
	} {
		t.Run(want, func(t *testing.T) {
			l := isolate(t)
			l.File = writeFile(t, "config.yaml", file)
			_, err := l.Load()
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
