package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://mcp.example.com/mcp":                       "https://mcp.example.com/mcp",
		"https://u:secret@mcp.example.com/mcp?key=sk-1&x=2": "https://u:xxxxx@mcp.example.com/mcp?key=xxxxx&x=xxxxx",
		"https://u@mcp.example.com/":                        "https://u@mcp.example.com/",
		"http://[::1]:namedport":                            "(an unparsable URL)",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
