package graph

import (
	"testing"
	"time"
)

func TestRetryWaits(t *testing.T) {
	tests := []struct {
		name   string
		policy RetryPolicy
		want   []time.Duration // waits after attempts 1, 2, 3
	}{
		{"a zero interval does not wait", RetryPolicy{}, []time.Duration{0, 0, 0}},
		{"LangGraph's default interval, given", RetryPolicy{InitialInterval: 500 * time.Millisecond}, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
		{"any negative interval does not wait", RetryPolicy{InitialInterval: -time.Second, BackoffFactor: 3}, []time.Duration{0, 0, 0}},
		{"backoff is capped", RetryPolicy{InitialInterval: time.Second, BackoffFactor: 10, MaxInterval: 5 * time.Second}, []time.Duration{time.Second, 5 * time.Second, 5 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy.withDefaults()
			for i, want := range tt.want {
				if got := p.wait(i + 1); got != want {
					t.Errorf("wait after attempt %d = %s, want %s", i+1, got, want)
				}
			}
		})
	}
}
