package agentserver

import (
	"encoding/json"
	"net/http"
)

type infoOut struct {
	Version string          `json:"version"`
	Flags   map[string]bool `json:"flags"`
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, infoOut{Version: s.opts.Version, Flags: map[string]bool{"assistants": true, "crons": false, "langsmith": false}})
}

func (s *Server) assistantOf(a *assistant) assistantOut {
	out := assistantOut{AssistantID: a.id, GraphID: a.graphID, Name: a.graphID, Config: json.RawMessage("{}"), Context: json.RawMessage("{}"),
		Metadata: Metadata{"created_by": jsonString("system")}, Version: 1, CreatedAt: a.created, UpdatedAt: a.created}
	for k, v := range a.info.metadata {
		if k != "created_by" {
			out.Metadata[k] = v
		}
	}
	if a.info.description != "" {
		d := a.info.description
		out.Description = &d
	}
	return out
}

type assistantSearch struct {
	GraphID  string   `json:"graph_id"`
	Name     string   `json:"name"`
	Metadata Metadata `json:"metadata"`
	Limit    int      `json:"limit"`
	Offset   int      `json:"offset"`
}

func (s *Server) matchAssistants(r *http.Request) ([]assistantOut, assistantSearch, error) {
	var q assistantSearch
	if err := decode(r, &q); err != nil {
		return nil, q, err
	}
	s.mu.Lock()
	all := append([]*assistant(nil), s.assistants...)
	s.mu.Unlock()
	var out []assistantOut
	for _, a := range all {
		o := s.assistantOf(a)
		if (q.GraphID != "" && q.GraphID != a.graphID) || (q.Name != "" && q.Name != o.Name) || !containsAll(o.Metadata, q.Metadata) {
			continue
		}
		out = append(out, o)
	}
	return out, q, nil
}

func (s *Server) searchAssistants(w http.ResponseWriter, r *http.Request) {
	out, q, err := s.matchAssistants(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, page(out, q.Limit, q.Offset, 10, w))
}

func (s *Server) countAssistants(w http.ResponseWriter, r *http.Request) {
	out, _, err := s.matchAssistants(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, len(out))
}

func (s *Server) getAssistant(w http.ResponseWriter, r *http.Request) {
	a, err := s.assistantFor(r.PathValue("assistant_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.assistantOf(a))
}

func (s *Server) assistantGraph(w http.ResponseWriter, r *http.Request) {
	a, err := s.assistantFor(r.PathValue("assistant_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Nodes []graphNode `json:"nodes"`
		Edges []graphEdge `json:"edges"`
	}{a.info.nodes, a.info.edges})
}

func (s *Server) assistantSchemas(w http.ResponseWriter, r *http.Request) {
	a, err := s.assistantFor(r.PathValue("assistant_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	st := a.info.stateSchema
	writeJSON(w, http.StatusOK, struct {
		GraphID       string          `json:"graph_id"`
		InputSchema   json.RawMessage `json:"input_schema"`
		OutputSchema  json.RawMessage `json:"output_schema"`
		StateSchema   json.RawMessage `json:"state_schema"`
		ConfigSchema  json.RawMessage `json:"config_schema"`
		ContextSchema json.RawMessage `json:"context_schema"`
	}{a.graphID, st, st, st, json.RawMessage(`{"type":"object"}`), json.RawMessage(`{"type":"object"}`)})
}

// page cuts a list to limit items from offset (limit ≤ 0: def), and says in
// X-Pagination-Total and X-Pagination-Next what else there is.
func page[T any](items []T, limit, offset, def int, w http.ResponseWriter) []T {
	if limit <= 0 {
		limit = def
	}
	offset = max(offset, 0)
	total := len(items)
	w.Header().Set("X-Pagination-Total", itoa(total))
	if offset >= total {
		return []T{}
	}
	end := min(offset+limit, total)
	if end < total {
		w.Header().Set("X-Pagination-Next", itoa(end))
	}
	return items[offset:end]
}
