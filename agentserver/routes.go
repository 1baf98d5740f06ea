package agentserver

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
)

var errEOF = io.EOF

// routes registers the API.
func (s *Server) routes() {
	h := func(pattern string, fn func(http.ResponseWriter, *http.Request)) {
		s.mux.HandleFunc(pattern, fn)
	}
	h("GET /ok", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]bool{"ok": true}) })
	h("GET /info", s.info)

	h("POST /assistants/search", s.searchAssistants)
	h("POST /assistants/count", s.countAssistants)
	h("GET /assistants/{assistant_id}", s.getAssistant)
	h("GET /assistants/{assistant_id}/graph", s.assistantGraph)
	h("GET /assistants/{assistant_id}/schemas", s.assistantSchemas)
	h("GET /assistants/{assistant_id}/subgraphs", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{}) })

	h("POST /threads", s.createThread)
	h("POST /threads/search", s.searchThreads)
	h("POST /threads/count", s.countThreads)
	h("GET /threads/{thread_id}", s.getThread)
	h("PATCH /threads/{thread_id}", s.patchThread)
	h("DELETE /threads/{thread_id}", s.deleteThread)
	h("GET /threads/{thread_id}/state", s.getState)
	h("GET /threads/{thread_id}/state/{checkpoint_id}", s.getState)
	h("POST /threads/{thread_id}/state/checkpoint", s.getStateAt)
	h("POST /threads/{thread_id}/state", s.updateState)
	h("POST /threads/{thread_id}/history", s.history)
	h("GET /threads/{thread_id}/history", s.history)

	h("POST /threads/{thread_id}/runs/stream", s.runStream)
	h("POST /threads/{thread_id}/runs/wait", s.runWait)
	h("POST /threads/{thread_id}/runs", s.runCreate)
	h("GET /threads/{thread_id}/runs", s.listRuns)
	h("GET /threads/{thread_id}/runs/{run_id}", s.getRun)
	h("DELETE /threads/{thread_id}/runs/{run_id}", s.deleteRun)
	h("GET /threads/{thread_id}/runs/{run_id}/join", s.joinRun)
	h("GET /threads/{thread_id}/runs/{run_id}/stream", s.joinStream)
	h("POST /threads/{thread_id}/runs/{run_id}/cancel", s.cancelRun)
	h("POST /runs/stream", s.runStream)
	h("POST /runs/wait", s.runWait)
	h("POST /runs", s.runCreate)
	h("GET /runs/{run_id}/stream", s.joinStream)
}

// Handler serves the API behind the server's guard: the Host check on
// loopback, the Origin allow-list and CORS, the token, the body's type and
// size.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Cache-Control", "no-store")
		if s.opts.Loopback && !loopbackHost(r.Host) {
			hd.Set("Connection", "close")
			writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not this server's: it listens on loopback, so use http://127.0.0.1 or http://localhost", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
			if !slices.Contains(s.opts.CORSOrigins, strings.ToLower(origin)) {
				hd.Set("Connection", "close")
				writeError(w, http.StatusForbidden, fmt.Sprintf("origin %s may not call this API; list it among the server's CORS origins to allow it", origin))
				return
			}
			hd.Set("Access-Control-Allow-Origin", origin)
			hd.Add("Vary", "Origin")
			hd.Set("Access-Control-Expose-Headers", "Content-Location, Location, X-Pagination-Next, X-Pagination-Total")
			if r.Method == http.MethodOptions {
				hd.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
				hd.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, X-Api-Key, X-Auth-Scheme")
				hd.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if s.opts.Token != "" && r.URL.Path != "/ok" && !authorized(r, s.opts.Token) {
			hd.Set("WWW-Authenticate", `Bearer realm="agentserver"`)
			hd.Set("Connection", "close")
			writeError(w, http.StatusUnauthorized, "this server needs its token: send it as x-api-key (the SDKs' apiKey) or Authorization: Bearer")
			return
		}
		if r.Body != nil && r.Method != http.MethodGet {
			// JSON, also as text/plain (LangGraph Studio sends it so); never
			// a form, which a page of another site could post.
			ct := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
			if ct != "" && ct != "application/json" && ct != "text/plain" {
				writeError(w, http.StatusUnsupportedMediaType, "send the body as JSON (Content-Type: application/json)")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBody)
		}
		s.mux.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries token as x-api-key or as
// Authorization: Bearer.
func authorized(r *http.Request, token string) bool {
	got := r.Header.Get("X-Api-Key")
	if got == "" {
		got, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

func sameOrigin(origin string, r *http.Request) bool {
	o := strings.ToLower(origin)
	host := strings.ToLower(r.Host)
	return o == "http://"+host || o == "https://"+host
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(strings.ToLower(host), "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
