package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/internal/httpx"
	"github.com/deepgraph/deepgraph/llm"
)

// Limits on what is read from the API.
const (
	// maxMessage bounds how much of an error body ends up in an error
	// message.
	maxMessage = 2000
	// maxErrorBody bounds the error body that is read.
	maxErrorBody = 1 << 20
	// maxReplyBody bounds a unary reply.
	maxReplyBody = 64 << 20
	// maxEventLine bounds one line of an event stream.
	maxEventLine = 8 << 20
)

// transportError maps an error of the HTTP exchange (no reply, or a reply
// body that could not be read). Context errors are returned as they are, for
// llm.Call to report as cancellation or timeout. broken marks an error after
// a 200 stream began: it then matches llm.ErrStreamBroken.
func (m *Model) transportError(err error, broken bool) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var le *llm.APIError
	if errors.As(err, &le) {
		return err
	}
	cause := err
	if broken {
		cause = fmt.Errorf("%w: %w", llm.ErrStreamBroken, err)
	}
	return &llm.APIError{
		Provider: provider,
		Message:  "request to the Gemini API failed: " + m.clean(err.Error()),
		KeyEnv:   m.keyEnv,
		Err:      cause,
	}
}

// statusError maps a reply with a non-2xx status: the API's error object
// (message, RetryInfo, ErrorInfo), else the body's text.
func (m *Model) statusError(resp *http.Response, at time.Time, combined bool) error {
	body, readErr := readLimited(resp.Body, maxErrorBody)
	var v struct {
		Error *wireError `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil || v.Error == nil {
		msg := strings.TrimSpace(string(body))
		if msg == "" && readErr != nil {
			msg = "reading the error reply: " + readErr.Error()
		}
		v.Error = &wireError{Message: msg}
	}
	out := m.apiError(resp.StatusCode, v.Error, combined)
	if d, ok := httpx.ParseRetryAfter(resp.Header.Get("Retry-After"), at); ok {
		out.RetryAfter = d
	}
	return out
}

// apiError maps the API's error object, for a reply of the given HTTP
// status. combined says the request combined tools with a native response
// schema, so a 400 about an unsupported combination matches ErrUnsupported.
func (m *Model) apiError(status int, e *wireError, combined bool) *llm.APIError {
	out := &llm.APIError{
		Provider:   provider,
		Status:     status,
		Message:    m.clean(e.Message),
		KeyEnv:     m.keyEnv,
		RetryAfter: retryDelay(e.Details),
	}
	if out.Message == "" {
		out.Message = e.Status
	}
	switch {
	case status == http.StatusBadRequest && invalidKey(e):
		// The Gemini API answers a bad key with 400 API_KEY_INVALID; report
		// it as the authentication failure it is.
		out.Status = http.StatusUnauthorized
		out.Message += " (HTTP 400 API_KEY_INVALID; check the key or create one at " + apiKeyURL + ")"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		out.Message += " (check the key or create one at " + apiKeyURL + ")"
	case status == http.StatusBadRequest && combined && unsupportedMessage(e.Message):
		out.Err = llm.ErrUnsupported
		out.Message += " (this model does not accept a JSON response schema together with tools; " +
			"use a Gemini 3 model or drop the schema)"
	}
	return out
}

// invalidKey reports the Gemini API's answer to an invalid API key.
func invalidKey(e *wireError) bool {
	for _, d := range e.Details {
		if d.Reason == "API_KEY_INVALID" {
			return true
		}
	}
	return strings.Contains(e.Message, "API key not valid")
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
func retryDelay(details []wireErrorDetail) time.Duration {
	for _, d := range details {
		if !strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			continue
		}
		if dur, err := time.ParseDuration(strings.TrimSpace(d.RetryDelay)); err == nil && dur > 0 {
			return dur
		}
	}
	return 0
}

// clean bounds an error message and removes the API key from it, should a
// proxy ever echo it.
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
