package agentserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// Every route of the API but GET /ok is guarded: without the token it is
// 401, with it from another site's page 403, with it through a name that
// is not loopback 421 — and none of them reaches its handler (no thread is
// made, none deleted).
func TestEveryRouteIsGuarded(t *testing.T) {
	srv, err := New(Options{Checkpointer: graph.NewMemorySaver(), Token: "s3cret", Loopback: true})
	require.NoError(t, err)
	h := srv.Handler()
	ids := strings.NewReplacer("{assistant_id}", "chat", "{thread_id}", "00000000-0000-4000-8000-000000000001",
		"{run_id}", "00000000-0000-4000-8000-000000000002", "{checkpoint_id}", "c1")
	for _, rt := range routeTable {
		method, path, _ := strings.Cut(rt.pattern, " ")
		path = ids.Replace(path)
		for _, c := range []struct {
			name   string
			host   string
			header map[string]string
			want   int
		}{
			{"no token", "127.0.0.1", nil, http.StatusUnauthorized},
			{"a wrong token", "127.0.0.1", map[string]string{"X-Api-Key": "wrong"}, http.StatusUnauthorized},
			{"another site's page", "127.0.0.1", map[string]string{"X-Api-Key": "s3cret", "Origin": "http://evil.example"}, http.StatusForbidden},
			{"a rebound name", "evil.example", map[string]string{"X-Api-Key": "s3cret"}, http.StatusMisdirectedRequest},
		} {
			if path == "/ok" && c.want == http.StatusUnauthorized {
				continue // open: a health check
			}
			req := httptest.NewRequest(method, "http://"+c.host+path, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, c.want, rec.Code, "%s %s with %s", method, path, c.name)
			assert.NotContains(t, rec.Body.String(), "s3cret", "%s %s with %s", method, path, c.name)
		}
	}
	assert.Empty(t, srv.threads, "no refused request made a thread")
}
