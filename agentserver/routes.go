package agentserver

import (
	"io"
	"net/http"
	"strings"

	"github.com/deepgraph/deepgraph/internal/guard"
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

// Handler serves the API behind the server's guard (the checks research
// serve applies to all its endpoints, internal/guard): the Host check on
// loopback, the Origin allow-list and CORS, the token; then the body's
// type and size.
func (s *Server) Handler() http.Handler {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	guarded := guard.Wrap(api, guard.Options{Token: s.opts.Token, Open: func(r *http.Request) bool { return r.URL.Path == "/ok" },
		CORSOrigins: s.opts.CORSOrigins, Loopback: s.opts.Loopback,
		AllowHeaders:  []string{"Authorization", "Content-Type", "Last-Event-ID", "X-Api-Key", "X-Auth-Scheme"},
		ExposeHeaders: []string{"Content-Location", "Location", "X-Pagination-Next", "X-Pagination-Total"},
		Realm:         "agentserver", TokenHint: "send it as x-api-key (the SDKs' apiKey) or Authorization: Bearer",
		OriginHint: "list it among the server's CORS origins to allow it",
		Refuse:     writeError})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		guarded.ServeHTTP(w, r)
	})
}
