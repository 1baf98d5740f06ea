package wiretap

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
)

// replyProbe is a provider's side of Record: it notes what it was shown.
type replyProbe struct {
	inspected []string
	lines     []string
}

func (p *replyProbe) reply(stream bool) Reply {
	return Reply{
		Stream:  stream,
		Inspect: func(body []byte) { p.inspected = append(p.inspected, string(body)) },
		Line:    func(line []byte) (bool, error) { p.lines = append(p.lines, string(line)); return true, nil },
		End:     func(error) error { return io.EOF },
		Decode:  testDecode,
	}
}

func response(status int, contentType string, body io.Reader, header ...string) *http.Response {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(body)}
}

func TestRecord(t *testing.T) {
	t.Run("transport error", func(t *testing.T) {
		var x Exchange
		var p replyProbe
		boom := errors.New("dial tcp: connection refused")
		resp, err := x.Record(nil, boom, p.reply(false))
		assert.Nil(t, resp)
		assert.Equal(t, boom, err)
		assert.Equal(t, boom, x.TransportErr)
		assert.Zero(t, x.Status)
	})
	t.Run("error status keeps status, Retry-After and body", func(t *testing.T) {
		var x Exchange
		var p replyProbe
		body := `{"error":{"message":"slow down"}}`
		resp, err := x.Record(response(http.StatusTooManyRequests, "application/json", strings.NewReader(body), "Retry-After", "7"), nil, p.reply(true))
		require.NoError(t, err)
		assert.Equal(t, http.StatusTooManyRequests, x.Status)
		assert.Equal(t, 7*time.Second, x.RetryAfter)
		assert.Equal(t, body, string(x.ErrBody))
		got, _ := io.ReadAll(resp.Body)
		assert.Equal(t, body, string(got), "langchaingo still reads the body")
		assert.Empty(t, p.inspected)
		assert.NoError(t, x.ReplyErr)
	})
	t.Run("a huge error body is bounded", func(t *testing.T) {
		var x Exchange
		var p replyProbe
		_, err := x.Record(response(http.StatusBadGateway, "text/html", bytes.NewReader(make([]byte, MaxErrorBody+100))), nil, p.reply(false))
		require.NoError(t, err)
		assert.Len(t, x.ErrBody, MaxErrorBody)
	})
	t.Run("a whole reply is inspected and handed on", func(t *testing.T) {
		var x Exchange
		var p replyProbe
		body := `{"choices":[]}`
		resp, err := x.Record(response(http.StatusOK, "application/json", strings.NewReader(body)), nil, p.reply(false))
		require.NoError(t, err)
		assert.Equal(t, []string{body}, p.inspected)
		got, _ := io.ReadAll(resp.Body)
		assert.Equal(t, body, string(got))
		assert.Equal(t, http.StatusOK, x.Status)
		assert.NoError(t, x.ReplyErr)
	})
	t.Run("a reply that breaks off", func(t *testing.T) {
		var x Exchange
		var p replyProbe
		body := io.MultiReader(strings.NewReader(`{"cho`), iotest.ErrReader(io.ErrUnexpectedEOF))
		resp, err := x.Record(response(http.StatusOK, "application/json", body), nil, p.reply(false))
		require.NoError(t, err)
		assert.Empty(t, p.inspected)
		assert.ErrorIs(t, x.ReplyErr, io.ErrUnexpectedEOF)
		_, rerr := io.ReadAll(resp.Body)
		assert.Equal(t, x.ReplyErr, rerr, "langchaingo's read fails with the recorded error")
	})
	t.Run("a stream goes through a LineTap", func(t *testing.T) {
		var x Exchange
		var p replyProbe
		resp, err := x.Record(response(http.StatusOK, "text/event-stream", strings.NewReader("data: 1\r\ndata: [DONE]\n")), nil, p.reply(true))
		require.NoError(t, err)
		got, _ := io.ReadAll(resp.Body)
		assert.Equal(t, "data: 1\ndata: [DONE]\n", string(got))
		assert.Equal(t, []string{"data: 1", "data: [DONE]"}, p.lines)
		assert.Empty(t, p.inspected)
	})
	t.Run("JSON where a stream was asked for", func(t *testing.T) {
		var x Exchange
		var p replyProbe
		resp, err := x.Record(response(http.StatusOK, "application/json", strings.NewReader(`{"error":{"message":"streaming is off"}}`)), nil, p.reply(true))
		require.NoError(t, err)
		require.Error(t, x.ReplyErr)
		assert.ErrorIs(t, x.ReplyErr, ErrNotStream)
		assert.Equal(t, "asked for an event stream but the server replied with application/json: streaming is off", x.ReplyErr.Error())
		_, rerr := io.ReadAll(resp.Body)
		assert.ErrorIs(t, rerr, ErrNotStream)
		assert.Empty(t, p.lines)
	})
}

// The 64 MiB bound is a large allocation; one test is enough.
func TestRecordReplyTooLarge(t *testing.T) {
	var x Exchange
	var p replyProbe
	body := io.LimitReader(zeros{}, MaxReplyBody+1)
	resp, err := x.Record(response(http.StatusOK, "application/json", body), nil, p.reply(false))
	require.NoError(t, err)
	assert.ErrorIs(t, x.ReplyErr, ErrMalformed)
	assert.Equal(t, "the reply is larger than 64 MiB", x.ReplyErr.Error())
	assert.Empty(t, p.inspected)
	_, rerr := resp.Body.Read(make([]byte, 1))
	assert.ErrorIs(t, rerr, ErrMalformed)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestFailure(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	src := Source{Provider: "acme", APIKey: key, KeyEnv: "ACME_API_KEY", EnvAPIKey: "ACME_API_KEY", Decode: testDecode}
	keyless := src
	keyless.APIKey, keyless.KeyEnv = "", ""
	libErr := errors.New("library: unexpected token " + key)
	tests := []struct {
		name string
		x    Exchange
		src  Source
		// want is the error text; "" means Failure returns nil.
		want   string
		status int
		is     []error
	}{
		{
			name: "no response", x: Exchange{Sent: true, TransportErr: errors.New("dial tcp 10.0.0.1:443: i/o timeout for " + key)}, src: src,
			want: "acme: cannot reach the server: dial tcp 10.0.0.1:443: i/o timeout for [redacted]", is: []error{llm.ErrUnavailable},
		},
		{
			name: "an error status with the server's message", x: Exchange{Sent: true, Status: 429, RetryAfter: time.Second, ErrBody: []byte(`{"error":{"message":"quota for ` + key + `"}}`)}, src: src,
			want: "acme: Too Many Requests (429): quota for [redacted]", status: 429, is: []error{llm.ErrRateLimited},
		},
		{
			name: "a rejected key names its variable", x: Exchange{Sent: true, Status: 401, ErrBody: []byte(`{"error":{"message":"invalid key"}}`)}, src: src,
			want: "acme: ACME_API_KEY was rejected (401): invalid key", status: 401, is: []error{llm.ErrAuth},
		},
		{
			name: "a keyless call refused says where a key goes", x: Exchange{Sent: true, Status: 403, ErrBody: []byte(`<html>denied</html>`)}, src: keyless,
			want:   "acme: Forbidden (403): no details in the reply (no API key was sent: set the API key in the config, or ACME_API_KEY)",
			status: 403, is: []error{llm.ErrAuth},
		},
		{
			name: "an error object in a 200 reply", x: Exchange{Sent: true, Status: 200, ReplyErr: &ReplyError{Msg: "overloaded", Status: 503, Err: ErrStreamError}}, src: src,
			want: "acme: Service Unavailable (503): overloaded", status: 503, is: []error{llm.ErrUnavailable, ErrStreamError},
		},
		{
			name: "an error object without a message", x: Exchange{Sent: true, Status: 200, ReplyErr: &ReplyError{Err: ErrStreamError}}, src: src,
			want: "acme: the server reported an error without a message", is: []error{ErrStreamError},
		},
		{
			name: "a stream cut short", x: Exchange{Sent: true, Status: 200, ReplyErr: &ReplyError{Msg: "the event stream broke off", Err: io.ErrUnexpectedEOF}}, src: src,
			want: "acme: the event stream broke off", is: []error{llm.ErrUnavailable, io.ErrUnexpectedEOF},
		},
		{
			name: "never sent", x: Exchange{}, src: src,
			want: "acme: building the request: library: unexpected token [redacted]", is: []error{libErr},
		},
		{name: "nothing recorded explains it", x: Exchange{Sent: true, Status: 200}, src: src, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.x.Failure(libErr, tt.src)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			for _, target := range tt.is {
				assert.ErrorIs(t, err, target)
			}
			var ae *llm.APIError
			if errors.As(err, &ae) {
				assert.Equal(t, tt.status, ae.Status)
				assert.Equal(t, tt.x.RetryAfter, ae.RetryAfter)
				assert.NotContains(t, ae.Message, key)
			}
		})
	}
}
