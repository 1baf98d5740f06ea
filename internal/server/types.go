package server

import (
	"encoding/json"
	"net/http"

	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/research"
)

// Info is what a run may choose on this server, and its version: the
// assistants' metadata "deepgraph", which the page reads.
type Info struct {
	Version       string            `json:"version"`
	Auth          bool              `json:"auth"`
	Kinds         []runstore.Kind   `json:"kinds"`
	Efforts       []research.Effort `json:"efforts"`
	DefaultEffort string            `json:"default_effort"`
	Backends      []string          `json:"backends"`
	// DefaultBackend is what a run without a backend uses.
	DefaultBackend string   `json:"default_backend"`
	Models         []string `json:"models"`
	// MaxQuestion is the longest question or task, in characters.
	MaxQuestion int `json:"max_question"`
	// DefaultReview says whether a research run pauses for its queries
	// when its configuration does not say (serve.review).
	DefaultReview bool `json:"default_review"`
}

// choices is the server's Info.
func (s *Server) choices() Info {
	c := s.eng.Choices()
	info := Info{Version: s.opts.Version, Auth: s.opts.Token != "", Kinds: c.Kinds, Efforts: c.Efforts, DefaultEffort: c.DefaultEffort,
		Backends: c.Backends, DefaultBackend: c.DefaultBackend, Models: c.Models, MaxQuestion: s.opts.MaxQuestion, DefaultReview: c.DefaultReview}
	for _, l := range []*[]string{&info.Backends, &info.Models} {
		if *l == nil {
			*l = []string{}
		}
	}
	return info
}

// writeError answers a refusal of the guard: {"error":{"code","message"}}.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: errorDetail{Code: code, Message: msg}})
}

// errorBody is the guard's refusal.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// The codes of the guard's refusals.
const (
	codeUnauthorized = "unauthorized"
	codeForbidden    = "forbidden"
)
