package search

import (
	"fmt"
	"strings"
)

// The values Options.TimeRange accepts.
const (
	TimeRangeDay   = "day"
	TimeRangeWeek  = "week"
	TimeRangeMonth = "month"
	TimeRangeYear  = "year"
)

// resolve applies the defaults to o and checks it. limit caps MaxResults
// at what one provider call can return.
func (o Options) resolve(limit int) (Options, error) {
	switch {
	case o.MaxResults < 0:
		return o, fmt.Errorf("search: MaxResults is %d; want 0 (the default of %d) or more: %w", o.MaxResults, DefaultMaxResults, ErrBadRequest)
	case o.MaxResults == 0:
		o.MaxResults = DefaultMaxResults
	}
	if limit > 0 && o.MaxResults > limit {
		o.MaxResults = limit
	}
	o.Language = strings.TrimSpace(o.Language)
	o.TimeRange = strings.ToLower(strings.TrimSpace(o.TimeRange))
	switch o.TimeRange {
	case "", TimeRangeDay, TimeRangeWeek, TimeRangeMonth, TimeRangeYear:
	default:
		return o, fmt.Errorf("search: unknown time range %q; want day, week, month, year or empty: %w", o.TimeRange, ErrBadRequest)
	}
	return o, nil
}

// checkQuery rejects an empty query before it costs a request.
func checkQuery(provider, query string) (string, error) {
	q := strings.TrimSpace(query)
	if q == "" {
		return "", fmt.Errorf("%s: empty query: %w", provider, ErrBadRequest)
	}
	return q, nil
}
