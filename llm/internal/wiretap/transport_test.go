package wiretap

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fakeCall records what the Transport asked of it.
type fakeCall struct {
	editErr  error
	edited   int
	observed []int // statuses seen; -1 for a transport error
	swap     io.ReadCloser
}

func (c *fakeCall) EditRequest(req *http.Request) error {
	c.edited++
	if c.editErr != nil {
		return c.editErr
	}
	req.Header.Set("X-Edited", "yes")
	return nil
}

func (c *fakeCall) Observe(resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		c.observed = append(c.observed, -1)
		return nil, err
	}
	c.observed = append(c.observed, resp.StatusCode)
	if c.swap != nil {
		resp.Body = c.swap
	}
	return resp, nil
}

func TestTransportHeaders(t *testing.T) {
	tests := []struct {
		name      string
		transport Transport
		want      http.Header // values the server must see; "" means absent
	}{
		{
			name:      "a key is kept",
			transport: Transport{KeyHeader: "Authorization"},
			want:      http.Header{"Authorization": {"Bearer placeholder"}, "X-Lib": {"lc"}},
		},
		{
			name:      "keyless removes the key header",
			transport: Transport{KeyHeader: "Authorization", Keyless: true},
			want:      http.Header{"Authorization": {""}, "X-Lib": {"lc"}},
		},
		{
			name: "extra headers replace, and cannot set the key",
			transport: Transport{KeyHeader: "X-Api-Key", Header: http.Header{
				"X-Lib": {"mine"}, "Http-Referer": {"https://example.com", "second"}, "x-api-key": {"stolen"},
			}},
			want: http.Header{"X-Api-Key": {"sk-placeholder"}, "X-Lib": {"mine"}, "Http-Referer": {"https://example.com", "second"}},
		},
		{
			name:      "keyless, extra headers cannot bring a key back",
			transport: Transport{KeyHeader: "X-Api-Key", Keyless: true, Header: http.Header{"X-Api-Key": {"stolen"}}},
			want:      http.Header{"X-Api-Key": {""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen http.Header
			tr := tt.transport
			tr.Next = roundTripFunc(func(r *http.Request) (*http.Response, error) {
				seen = r.Header.Clone()
				return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
			})
			req, err := http.NewRequest(http.MethodPost, "http://example.invalid/v1/x", strings.NewReader(`{}`))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer placeholder")
			req.Header.Set("X-Api-Key", "sk-placeholder")
			req.Header.Set("X-Lib", "lc")
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			for k, vs := range tt.want {
				if vs[0] == "" {
					assert.Empty(t, seen.Values(k), k)
					continue
				}
				assert.Equal(t, vs, seen.Values(k), k)
			}
			assert.Equal(t, "Bearer placeholder", req.Header.Get("Authorization"), "the caller's request is not changed")
		})
	}
}

func TestTransportCall(t *testing.T) {
	sent := 0
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent++
		if r.Header.Get("X-Fail") != "" {
			return nil, errors.New("connection refused")
		}
		return &http.Response{StatusCode: http.StatusTeapot, Header: http.Header{"X-Edited": {r.Header.Get("X-Edited")}}, Body: http.NoBody, Request: r}, nil
	})
	tr := &Transport{Next: next, KeyHeader: "Authorization"}
	newReq := func(ctx context.Context) *http.Request {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://example.invalid/", strings.NewReader(`{}`))
		require.NoError(t, err)
		return req
	}

	t.Run("without a call the request passes untouched", func(t *testing.T) {
		sent = 0
		resp, err := tr.RoundTrip(newReq(context.Background()))
		require.NoError(t, err)
		assert.Equal(t, 1, sent)
		assert.Empty(t, resp.Header.Get("X-Edited"))
	})
	t.Run("the call edits and observes", func(t *testing.T) {
		sent = 0
		c := &fakeCall{swap: io.NopCloser(strings.NewReader("swapped"))}
		resp, err := tr.RoundTrip(newReq(WithCall(context.Background(), c)))
		require.NoError(t, err)
		assert.Equal(t, 1, c.edited)
		assert.Equal(t, []int{http.StatusTeapot}, c.observed)
		assert.Equal(t, "yes", resp.Header.Get("X-Edited"))
		body, _ := io.ReadAll(resp.Body)
		assert.Equal(t, "swapped", string(body))
	})
	t.Run("an edit error sends nothing", func(t *testing.T) {
		sent = 0
		c := &fakeCall{editErr: errors.New("bad body")}
		_, err := tr.RoundTrip(newReq(WithCall(context.Background(), c)))
		assert.ErrorIs(t, err, c.editErr)
		assert.Zero(t, sent)
		assert.Empty(t, c.observed)
	})
	t.Run("a transport error is observed", func(t *testing.T) {
		c := &fakeCall{}
		req := newReq(WithCall(context.Background(), c))
		req.Header.Set("X-Fail", "1")
		_, err := tr.RoundTrip(req)
		require.Error(t, err)
		assert.Equal(t, []int{-1}, c.observed)
	})
}

func TestEditJSONBody(t *testing.T) {
	errEdit := errors.New("no messages")
	tests := []struct {
		name    string
		body    io.Reader // nil: no body
		edit    func(map[string]json.RawMessage) error
		want    string
		wantErr string
		is      error
	}{
		{
			name: "members replaced and removed",
			body: strings.NewReader(`{"model":"m","temperature":0,"stream":true}`),
			edit: func(b map[string]json.RawMessage) error {
				delete(b, "temperature")
				b["response_format"] = json.RawMessage(`{"type":"json_object"}`)
				return nil
			},
			want: `{"model":"m","response_format":{"type":"json_object"},"stream":true}`,
		},
		{name: "no body", body: nil, edit: func(map[string]json.RawMessage) error { t.Error("edit called without a body"); return nil }},
		{name: "not JSON", body: strings.NewReader(`model=m`), edit: nil, wantErr: "editing the request body"},
		{name: "JSON but not an object", body: strings.NewReader(`null`), edit: nil, wantErr: "editing the request body", is: errNotObject},
		{name: "the edit fails", body: strings.NewReader(`{}`), edit: func(map[string]json.RawMessage) error { return errEdit }, wantErr: "editing the request body: no messages", is: errEdit},
		{name: "the body cannot be read", body: iotest.ErrReader(errors.New("read failed")), edit: nil, wantErr: "reading the request body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://example.invalid/", tt.body)
			require.NoError(t, err)
			if tt.body == nil {
				req.Body = nil
			}
			err = EditJSONBody(req, tt.edit)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				if tt.is != nil {
					assert.ErrorIs(t, err, tt.is)
				}
				return
			}
			require.NoError(t, err)
			if tt.want == "" {
				assert.Nil(t, req.Body)
				return
			}
			got, err := io.ReadAll(req.Body)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))
			assert.Equal(t, int64(len(got)), req.ContentLength)
			require.NotNil(t, req.GetBody)
			again, err := req.GetBody()
			require.NoError(t, err)
			replay, err := io.ReadAll(again)
			require.NoError(t, err)
			assert.Equal(t, string(got), string(replay), "GetBody replays the edited body")
		})
	}
}
