package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/deepgraph/deepgraph/llm"
)

// Methods of a model resource.
const (
	methodGenerate = "generateContent"
	methodStream   = "streamGenerateContent"
)

// post sends the call's body to a method of the model and returns the reply
// if its status is 2xx; the caller closes its body. Any other status is an
// *llm.APIError built from the API's error object. The retries, the
// concurrency bound and the call's timeout come from the client of
// Config.Client.
func (m *Model) post(ctx context.Context, method string, c *call) (*http.Response, error) {
	target := m.endpoint + ":" + method
	if method == methodStream {
		target += "?alt=sse"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(c.encoded))
	if err != nil {
		return nil, fmt.Errorf("gemini: building the request: %w: %s", llm.ErrBadRequest, m.clean(err.Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-goog-api-key", m.apiKey)
	if method == methodStream {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, m.transportError(err, false)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, m.statusError(resp, time.Now(), c.combined)
	}
	return resp, nil
}

// generate runs a unary generateContent call.
func (m *Model) generate(ctx context.Context, c *call) (*wireResponse, error) {
	resp, err := m.post(ctx, methodGenerate, c)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body, maxReplyBody)
	if err != nil {
		return nil, m.transportError(fmt.Errorf("reading the reply: %w", err), false)
	}
	var out wireResponse
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, m.transportError(fmt.Errorf("the reply is not a GenerateContentResponse: %w", err), false)
	}
	if out.Error != nil {
		return nil, m.apiError(errorStatus(out.Error, resp.StatusCode), out.Error, c.combined)
	}
	return &out, nil
}

// errorStatus is the HTTP status an error object inside a 2xx reply stands
// for: its code, else 500 (a failure of unknown kind on the API's side).
func errorStatus(e *wireError, status int) int {
	if e.Code >= 400 && e.Code <= 599 {
		return e.Code
	}
	if status >= 400 {
		return status
	}
	return http.StatusInternalServerError
}

// readLimited reads r up to limit bytes; a longer body is an error.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return body, err
	}
	if int64(len(body)) > limit {
		return body[:limit], fmt.Errorf("the reply is larger than %d MiB", limit>>20)
	}
	return body, nil
}
