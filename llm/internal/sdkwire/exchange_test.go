package sdkwire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

func TestMiddleware(t *testing.T) {
	var seen *http.Request
	reply := func(status int, body string, header ...string) func(*http.Request) (*http.Response, error) {
		return func(req *http.Request) (*http.Response, error) {
			seen = req
			h := http.Header{}
			for i := 0; i+1 < len(header); i += 2 {
				h.Set(header[i], header[i+1])
			}
			return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
		}
	}
	newReq := func() *http.Request {
		req, _ := http.NewRequest(http.MethodPost, "http://x/v1", nil)
		req.Header.Set("Authorization", "Bearer from-env")
		return req
	}
	mw := Middleware(Headers{KeyHeader: "Authorization", Keyless: true, Extra: http.Header{"X-Title": {"dg"}, "Authorization": {"Bearer nope"}}})

	resp, err := mw(newReq(), reply(http.StatusOK, "ok"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, seen.Header.Values("Authorization"), "a keyless server never sees a key, nor can Extra set one")
	assert.Equal(t, "dg", seen.Header.Get("X-Title"))

	_, err = mw(newReq(), reply(http.StatusTooManyRequests, `{"error":{"message":"slow"}}`, "Retry-After", "7"))
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusTooManyRequests, se.Status)
	assert.Equal(t, "7", se.Header.Get("Retry-After"))
	assert.Equal(t, `{"error":{"message":"slow"}}`, string(se.Body))

	_, err = mw(newReq(), reply(http.StatusBadGateway, strings.Repeat("x", MaxErrorBody+10)))
	require.ErrorAs(t, err, &se)
	assert.Len(t, se.Body, MaxErrorBody, "the body kept is bounded")

	boom := errors.New("dial tcp: connection refused")
	_, err = mw(newReq(), func(*http.Request) (*http.Response, error) { return nil, boom })
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.ErrorIs(t, err, boom)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = mw(newReq().WithContext(ctx), func(*http.Request) (*http.Response, error) { return nil, boom })
	assert.ErrorIs(t, err, context.Canceled, "the caller's cancellation is not a transport failure")
}

func TestFailure(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	src := Source{Provider: "acme", APIKey: key, KeyEnv: "ACME_API_KEY", EnvAPIKey: "ACME_API_KEY", Decode: testDecode}
	keyless := src
	keyless.APIKey, keyless.KeyEnv = "", ""
	tests := []struct {
		name   string
		err    error
		src    Source
		want   string
		status int
		retry  time.Duration
		is     []error
	}{
		{
			name: "no response", err: &TransportError{Err: errors.New("dial tcp 10.0.0.1:443: i/o timeout for " + key)}, src: src,
			want: "acme: cannot reach the server: dial tcp 10.0.0.1:443: i/o timeout for [redacted]", is: []error{llm.ErrUnavailable},
		},
		{
			name: "an error status with the server's message",
			err:  &StatusError{Status: 429, Header: http.Header{"Retry-After": {"1"}}, Body: []byte(`{"error":{"message":"quota for ` + key + `"}}`)}, src: src,
			want: "acme: Too Many Requests (429): quota for [redacted]", status: 429, retry: time.Second, is: []error{llm.ErrRateLimited},
		},
		{
			name: "a rejected key names its variable", err: &StatusError{Status: 401, Body: []byte(`{"error":{"message":"invalid key"}}`)}, src: src,
			want: "acme: ACME_API_KEY was rejected (401): invalid key", status: 401, is: []error{llm.ErrAuth},
		},
		{
			name: "a keyless call refused says where a key goes", err: &StatusError{Status: 403, Body: []byte(`<html>denied</html>`)}, src: keyless,
			want:   "acme: Forbidden (403): no details in the reply (no API key was sent: set the API key in the config, or ACME_API_KEY)",
			status: 403, is: []error{llm.ErrAuth},
		},
		{
			name: "an error object in a 200 reply", err: &ReplyError{Msg: "overloaded", Status: 503, Err: ErrStreamError}, src: src,
			want: "acme: Service Unavailable (503): overloaded", status: 503, is: []error{llm.ErrUnavailable, ErrStreamError},
		},
		{
			name: "an error object without a message", err: &ReplyError{Err: ErrStreamError}, src: src,
			want: "acme: the server reported an error without a message", is: []error{ErrStreamError},
		},
		{
			name: "a stream cut short", err: StreamEnded(io.ErrUnexpectedEOF), src: src,
			want: "acme: the event stream broke off: unexpected EOF", is: []error{llm.ErrUnavailable, llm.ErrStreamBroken, io.ErrUnexpectedEOF},
		},
		{
			name: "a reply the SDK could not read", err: errors.New("error parsing response json: unexpected token " + key), src: src,
			want: "acme: malformed reply: error parsing response json: unexpected token [redacted]", is: []error{ErrMalformed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.src.Failure(context.Background(), tt.err)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			for _, target := range tt.is {
				assert.ErrorIs(t, err, target)
			}
			var ae *llm.APIError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tt.status, ae.Status)
			assert.Equal(t, tt.retry, ae.RetryAfter)
			assert.NotContains(t, ae.Message, key)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, context.Canceled, src.Failure(ctx, &TransportError{Err: errors.New("x")}), "the caller's context explains the failure first")
}

func TestLineEnded(t *testing.T) {
	read := func(s string) error {
		_, err := io.ReadAll(LineEnded(io.NopCloser(strings.NewReader(s))))
		return err
	}
	assert.NoError(t, read("data: 1\n\n"))
	assert.NoError(t, read(""))
	assert.ErrorIs(t, read("data: {\"a\":"), io.ErrUnexpectedEOF)
}
