package search

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// Chain is a Searcher that tries its providers in order and returns the
// first answer. A provider's failure (an error) moves on to the next; the
// error, when all fail, is a *ChainError listing every provider's failure.
//
// An empty result is an answer, not a failure, and does not fall back: the
// query found nothing, and another index would mostly find nothing too,
// at the cost of a second call and of results silently mixed from two
// providers. (A provider that returns nothing because it is broken must
// say so with an error; SearXNG does when every engine failed.)
// Cancellation of the caller's context stops the chain at once.
type Chain struct {
	providers []Searcher
	logger    *slog.Logger
}

var _ Searcher = (*Chain)(nil)

// NewChain returns a Chain over providers, in the order given; nil
// entries are skipped.
func NewChain(providers ...Searcher) *Chain {
	c := &Chain{logger: slog.New(slog.DiscardHandler)}
	for _, p := range providers {
		if p != nil {
			c.providers = append(c.providers, p)
		}
	}
	return c
}

// WithLogger makes the chain log each fallback (at Warn) to l and returns c.
func (c *Chain) WithLogger(l *slog.Logger) *Chain {
	if l != nil {
		c.logger = l
	}
	return c
}

// Providers returns the chain's providers in order.
func (c *Chain) Providers() []Searcher { return append([]Searcher(nil), c.providers...) }

// Name lists the providers: "searxng,tavily".
func (c *Chain) Name() string {
	names := make([]string, len(c.providers))
	for i, p := range c.providers {
		names[i] = p.Name()
	}
	return strings.Join(names, ",")
}

// Search asks each provider in turn until one answers without error.
func (c *Chain) Search(ctx context.Context, query string, opts Options) ([]Result, error) {
	if len(c.providers) == 0 {
		return nil, fmt.Errorf("search: the provider chain is empty; configure at least one of %s: %w",
			strings.Join(ProviderNames(), ", "), ErrNotConfigured)
	}
	var errs []error
	for i, p := range c.providers {
		if err := ctx.Err(); err != nil {
			return nil, c.stopped(err, errs)
		}
		results, err := p.Search(ctx, query, opts)
		if err == nil {
			if results == nil {
				results = []Result{}
			}
			return results, nil
		}
		if ctx.Err() != nil {
			return nil, c.stopped(ctx.Err(), append(errs, err))
		}
		if !strings.HasPrefix(err.Error(), p.Name()) {
			err = fmt.Errorf("%s: %w", p.Name(), err)
		}
		errs = append(errs, err)
		if i+1 < len(c.providers) {
			c.logger.WarnContext(ctx, "search: provider failed, trying the next", "provider", p.Name(),
				"next", c.providers[i+1].Name(), "err", err)
		}
	}
	return nil, &ChainError{Errors: errs}
}

func (c *Chain) stopped(cause error, errs []error) error {
	if len(errs) == 0 {
		return fmt.Errorf("search: %w", cause)
	}
	return fmt.Errorf("search: %w (after: %v)", cause, &ChainError{Errors: errs})
}
