package httpx

import (
	"fmt"
	"net/http"
)

// ErrorText is the message of a failed provider call, shared by the llm and
// search error types: "tavily: TAVILY_API_KEY was rejected (401): …" for a
// refused key, "gemini: Too Many Requests (429): …" for other statuses, and
// "provider: message" when no response arrived (status 0).
func ErrorText(provider, keyEnv string, status int, msg string) string {
	switch {
	case (status == http.StatusUnauthorized || status == http.StatusForbidden) && keyEnv != "":
		return fmt.Sprintf("%s: %s was rejected (%d): %s", provider, keyEnv, status, msg)
	case status != 0:
		return fmt.Sprintf("%s: %s (%d): %s", provider, StatusText(status), status, msg)
	default:
		return fmt.Sprintf("%s: %s", provider, msg)
	}
}

// StatusText names an HTTP status, including the non-standard ones
// providers use (Anthropic's 529 "Overloaded").
func StatusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	switch code {
	case 529:
		return "Overloaded"
	case 499:
		return "Client Closed Request"
	}
	return "HTTP error"
}
