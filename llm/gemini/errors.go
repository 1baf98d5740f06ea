package gemini

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/deepgraph/deepgraph/internal/httpx"
	"github.com/deepgraph/deepgraph/llm"
)

// responseInfoKey keys the *responseInfo of a call in its context.
type responseInfoKey struct{}

// responseInfo is what recordingTransport saw of the last HTTP response.
type responseInfo struct {
	mu         sync.Mutex
	status     int
	retryAfter string
	at         time.Time
}

func (i *responseInfo) set(status int, retryAfter string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.status, i.retryAfter, i.at = status, retryAfter, time.Now()
}

func (i *responseInfo) get() (int, string, time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.status, i.retryAfter, i.at
}

// maxMessage bounds how much of an error body ends up in an error message.
const maxMessage = 2000

// apiError maps an error of a genai call to an *llm.APIError. Context errors
// are returned as they are, for llm.Call to report as cancellation or
// timeout. combined says the request combined tools with a native response
// schema, so a 400 about an unsupported combination matches ErrUnsupported.
func (m *Model) apiError(err error, info *responseInfo, combined bool) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var le *llm.APIError
	if errors.As(err, &le) {
		return err
	}
	status, retryAfter, at := info.get()
	ae, ok := asGenaiError(err)
	if !ok {
		return &llm.APIError{
			Provider: provider,
			Message:  "request to the Gemini API failed: " + m.clean(err.Error()),
			KeyEnv:   m.keyEnv,
			Err:      err,
		}
	}
	out := &llm.APIError{
		Provider: provider,
		Status:   ae.Code,
		Message:  m.clean(ae.Message),
		KeyEnv:   m.keyEnv,
	}
	if out.Status == 0 {
		out.Status = status
	}
	if out.Message == "" {
		out.Message = ae.Status
	}
	if out.Status == status {
		if d, ok := httpx.ParseRetryAfter(retryAfter, at); ok {
			out.RetryAfter = d
		}
	}
	if out.RetryAfter == 0 {
		out.RetryAfter = retryDelay(ae.Details)
	}
	switch {
	case out.Status == http.StatusBadRequest && invalidKey(ae):
		// The Gemini API answers a bad key with 400 API_KEY_INVALID; report
		// it as the authentication failure it is.
		out.Status = http.StatusUnauthorized
		out.Message += " (HTTP 400 API_KEY_INVALID; check the key or create one at " + apiKeyURL + ")"
	case out.Status == http.StatusUnauthorized || out.Status == http.StatusForbidden:
		out.Message += " (check the key or create one at " + apiKeyURL + ")"
	case out.Status == http.StatusBadRequest && combined && unsupportedMessage(ae.Message):
		out.Err = llm.ErrUnsupported
		out.Message += " (this model does not accept a JSON response schema together with tools; " +
			"use a Gemini 3 model or drop the schema)"
	}
	return out
}

// asGenaiError finds a genai.APIError (genai returns it by value) in err.
func asGenaiError(err error) (genai.APIError, bool) {
	var v genai.APIError
	if errors.As(err, &v) {
		return v, true
	}
	var p *genai.APIError
	if errors.As(err, &p) && p != nil {
		return *p, true
	}
	return genai.APIError{}, false
}

// invalidKey reports the Gemini API's answer to an invalid API key.
func invalidKey(ae genai.APIError) bool {
	for _, d := range ae.Details {
		if reason, _ := d["reason"].(string); reason == "API_KEY_INVALID" {
			return true
		}
	}
	return strings.Contains(ae.Message, "API key not valid")
}

// unsupportedMessage reports a 400 message about an unsupported feature
// combination, e.g. "controlled generation is not supported with
// google_search tool" or "Tool use with a response mime type:
// 'application/json' is unsupported".
func unsupportedMessage(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "unsupported") || strings.Contains(msg, "not supported") ||
		strings.Contains(msg, "not enabled")
}

// retryDelay reads google.rpc.RetryInfo's retryDelay ("37s") from error
// details; 0 when absent.
func retryDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		typ, _ := d["@type"].(string)
		if !strings.HasSuffix(typ, "google.rpc.RetryInfo") {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if dur, err := time.ParseDuration(strings.TrimSpace(s)); err == nil && dur > 0 {
			return dur
		}
	}
	return 0
}

// clean bounds an error message and removes the API key from it, should a
// proxy or the SDK ever echo it.
func (m *Model) clean(msg string) string {
	msg = redact(strings.TrimSpace(msg), m.apiKey)
	if len(msg) > maxMessage {
		cut := maxMessage
		for cut > 0 && !isRuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// redact replaces the key in s.
func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}
