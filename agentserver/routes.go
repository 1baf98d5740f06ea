package agentserver

import (
	"io"
	"net/http"
	"strings"

	"github.com/deepgraph/deepgraph/internal/guard"
)

var errEOF = io.EOF

// route is an endpoint of the API: its pattern and its handler.
type route struct {
	pattern string
	handle  func(*Server, http.ResponseWriter, *http.Request)
}

// routeTable is the API.
var routeTable = []route{
	{"GET /ok", func(_ *Server, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]bool{"ok": true})
	}},
	{"GET /info", (*Server).info},

	{"POST /assistants/search", (*Server).searchAssistants},
	{"POST /assistants/count", (*Server).countAssistants},
	{"GET /assistants/{assistant_id}", (*Server).getAssistant},
	{"GET /assistants/{assistant_id}/graph", (*Server).assistantGraph},
	{"GET /assistants/{assistant_id}/schemas", (*Server).assistantSchemas},
	{"GET /assistants/{assistant_id}/subgraphs", func(_ *Server, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]any{}) }},

	{"POST /threads", (*Server).createThread},
	{"POST /threads/search", (*Server).searchThreads},
	{"POST /threads/count", (*Server).countThreads},
	{"GET /threads/{thread_id}", (*Server).getThread},
	{"PATCH /threads/{thread_id}", (*Server).patchThread},
	{"DELETE /threads/{thread_id}", (*Server).deleteThread},
	{"GET /threads/{thread_id}/state", (*Server).getState},
	{"GET /threads/{thread_id}/state/{checkpoint_id}", (*Server).getState},
	{"POST /threads/{thread_id}/state/checkpoint", (*Server).getStateAt},
	{"POST /threads/{thread_id}/state", (*Server).updateState},
	{"POST /threads/{thread_id}/history", (*Server).history},
	{"GET /threads/{thread_id}/history", (*Server).history},

	{"POST /threads/{thread_id}/runs/stream", (*Server).runStream},
	{"POST /threads/{thread_id}/runs/wait", (*Server).runWait},
	{"POST /threads/{thread_id}/runs", (*Server).runCreate},
	{"GET /threads/{thread_id}/runs", (*Server).listRuns},
	{"GET /threads/{thread_id}/runs/{run_id}", (*Server).getRun},
	{"DELETE /threads/{thread_id}/runs/{run_id}", (*Server).deleteRun},
	{"GET /threads/{thread_id}/runs/{run_id}/join", (*Server).joinRun},
	{"GET /threads/{thread_id}/runs/{run_id}/stream", (*Server).joinStream},
	{"POST /threads/{thread_id}/runs/{run_id}/cancel", (*Server).cancelRun},
	{"POST /runs/stream", (*Server).runStream},
	{"POST /runs/wait", (*Server).runWait},
	{"POST /runs", (*Server).runCreate},
	{"GET /runs/{run_id}/stream", (*Server).joinStream},
}

// routes registers the API.
func (s *Server) routes() {
	for _, rt := range routeTable {
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rt.handle(s, w, r) })
		if s.opts.Route != nil {
			h = s.opts.Route(rt.pattern, h)
		}
		s.mux.Handle(rt.pattern, h)
	}
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
