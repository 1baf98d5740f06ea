package search

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2024-05-01T10:20:30Z", time.Date(2024, 5, 1, 10, 20, 30, 0, time.UTC), true},
		{"2024-05-01T10:20:30+02:00", time.Date(2024, 5, 1, 8, 20, 30, 0, time.UTC), true},
		{"2024-05-01T10:20:30", time.Date(2024, 5, 1, 10, 20, 30, 0, time.UTC), true},
		{"2024-05-01T10:20:30.123456", time.Date(2024, 5, 1, 10, 20, 30, 123456000, time.UTC), true},
		{"2024-05-01 10:20:30", time.Date(2024, 5, 1, 10, 20, 30, 0, time.UTC), true},
		{"2024-05-01 10:20:30+00:00", time.Date(2024, 5, 1, 10, 20, 30, 0, time.UTC), true},
		{"2024-05-01", time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), true},
		{"Wed, 01 May 2024 10:20:30 GMT", time.Date(2024, 5, 1, 10, 20, 30, 0, time.UTC), true},
		{"May 1, 2024", time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), true},
		{"1 May 2024", time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), true},
		{"1714558830", time.Date(2024, 5, 1, 10, 20, 30, 0, time.UTC), true},
		{"3 days ago", now.AddDate(0, 0, -3), true},
		{"an hour ago", now.Add(-time.Hour), true},
		{"2 weeks ago", now.AddDate(0, 0, -14), true},
		{"1 month ago", now.AddDate(0, -1, 0), true},
		{"yesterday", now.AddDate(0, 0, -1), true},
		{"", time.Time{}, false},
		{"soon", time.Time{}, false},
		{"0001-01-01T00:00:00Z", time.Time{}, false},
		{"2999-01-01", time.Time{}, false},
		{"-5", time.Time{}, false},
		{"NaN", time.Time{}, false},
		{"many days ago", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseTime(tt.in, now)
			assert.Equal(t, tt.ok, ok)
			assert.True(t, tt.want.Equal(got), "got %v want %v", got, tt.want)
		})
	}
}

func TestFlexJSON(t *testing.T) {
	var v struct {
		A flexTime  `json:"a"`
		B flexTime  `json:"b"`
		C flexTime  `json:"c"`
		D flexTime  `json:"d"`
		E flexFloat `json:"e"`
		F flexFloat `json:"f"`
		G flexFloat `json:"g"`
		H flexFloat `json:"h"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"a":"2024-05-01T00:00:00","b":null,"c":"garbage","d":1714558830,"e":1.5,"f":"1.67","g":null,"h":"n/a"}`), &v))
	assert.Equal(t, time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), v.A.Time)
	assert.True(t, v.B.IsZero())
	assert.True(t, v.C.IsZero(), "unreadable dates are dropped, not fatal")
	assert.Equal(t, int64(1714558830), v.D.Unix())
	assert.Equal(t, flexFloat(1.5), v.E)
	assert.Equal(t, flexFloat(1.67), v.F)
	assert.Zero(t, v.G)
	assert.Zero(t, v.H)
}

func TestPlainText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain  text\n here", "plain text here"},
		{"<strong>Go</strong> is &amp; fast", "Go is & fast"},
		{"a<br>b", "a b"},
		{"x<script>alert(1)</script>y<style>p{}</style>z", "x y z"},
		{"<b>Go</b>lang", "Golang"},
		{"AT&amp;T &lt;tag&gt;", "AT&T <tag>"},
		{"unclosed <b>bold", "unclosed bold"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, plainText(tt.in), tt.in)
	}
}

func TestErrorMessage(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"detail":{"error":"Unauthorized: missing or invalid API key."}}`, "Unauthorized: missing or invalid API key."},
		{`{"detail":"Bad query"}`, "Bad query"},
		{`{"type":"ErrorResponse","error":{"status":422,"code":"VALIDATION","detail":"Unable to validate request parameter(s)."}}`, "Unable to validate request parameter(s). (VALIDATION)"},
		{`{"error":"quota"}`, "quota"},
		{`{"message":"nope"}`, "nope"},
		{"<html><head><title>403 Forbidden</title></head><body><h1>Forbidden</h1></body></html>", "403 Forbidden Forbidden"},
		{"", "empty response body"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, errorMessage([]byte(tt.body)), tt.body)
	}
	long := make([]byte, 1000)
	for i := range long {
		long[i] = 'x'
	}
	assert.Len(t, []rune(errorMessage(long)), 301, "long bodies are shortened")
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2024-05-01T10:20:30Z", "3 days ago", "1714558830", "May 1, 2024", "", "9999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTime(s, now)
		if ok && (got.Year() < 1900 || got.After(now.Add(24*time.Hour))) {
			t.Fatalf("parseTime(%q) = %v accepted an implausible date", s, got)
		}
		if !ok && !got.IsZero() {
			t.Fatalf("parseTime(%q) = %v with ok=false", s, got)
		}
	})
}
