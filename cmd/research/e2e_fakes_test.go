package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepgraph/deepgraph/internal/fakeproviders"
)

// Fakes of the providers' wire protocols, shared by the end-to-end tests.
// What they share with scripts/fakeapi (reading a chat request, writing a
// completion or a SearXNG search) is in internal/fakeproviders.

const (
	geminiKey = "AIzaSy-e2e-gemini-key-0123456789"
	openaiKey = "sk-e2e-openai-key-abcdefghijklmnop"
	tavilyKey = "tvly-e2e-tavily-key-secret"
)

// lockedBuffer is a bytes.Buffer safe for a process's writes and a test's
// reads at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// recorder keeps what a fake received.
type recorder struct {
	mu   sync.Mutex
	reqs []recordedReq
}

type recordedReq struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
}

func (r *recorder) add(req *http.Request, body []byte) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, recordedReq{Method: req.Method, Path: req.URL.Path, RawQuery: req.URL.RawQuery, Header: req.Header.Clone(), Body: body})
	return len(r.reqs)
}

func (r *recorder) all() []recordedReq {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recordedReq(nil), r.reqs...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

// hangUntilGone blocks until the client goes away (or 30 s pass).
func hangUntilGone(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(30 * time.Second):
	}
}

// ---------------------------------------------------------------- Gemini

// geminiRequest is the part of a generateContent body the fake reads.
type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"systemInstruction"`
	Tools            []map[string]json.RawMessage `json:"tools"`
	GenerationConfig struct {
		ResponseMIMEType   string `json:"responseMimeType"`
		ResponseJSONSchema *struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

func (g geminiRequest) prompt() string {
	var b strings.Builder
	for _, c := range g.Contents {
		for _, p := range c.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func (g geminiRequest) grounded() bool {
	for _, t := range g.Tools {
		if _, ok := t["googleSearch"]; ok {
			return true
		}
	}
	return false
}

// schemaHas reports whether the request asks for a JSON reply with the
// property p.
func (g geminiRequest) schemaHas(p string) bool {
	s := g.GenerationConfig.ResponseJSONSchema
	if s == nil {
		return false
	}
	_, ok := s.Properties[p]
	return ok
}

// geminiCall is a decoded request with its kind, for scripts.
type geminiCall struct {
	n      int // 1-based request number
	model  string
	stream bool
	req    geminiRequest
	w      http.ResponseWriter
	r      *http.Request
}

// fakeGemini speaks the Gemini REST protocol: POST
// /v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse,
// key in x-goog-api-key. script answers each request; nil handles it with
// the default deep-research script.
type fakeGemini struct {
	srv *httptest.Server
	recorder
	key string

	mu          sync.Mutex
	reflections int
	chunkURIs   map[string]bool // every grounding chunk URI handed out
	script      func(c geminiCall) bool
}

var geminiPath = regexp.MustCompile(`^/v1beta/models/([^/:]+):(generateContent|streamGenerateContent)$`)

func newFakeGemini(t *testing.T) *fakeGemini {
	t.Helper()
	f := &fakeGemini{key: geminiKey, chunkURIs: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// setScript sets the script that answers the requests from now on.
func (f *fakeGemini) setScript(script func(c geminiCall) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = script
}

// hangOn makes the grounded search of query hang until its client goes,
// while the returned switch is on (it starts on).
func (f *fakeGemini) hangOn(query string) *atomic.Bool {
	hang := &atomic.Bool{}
	hang.Store(true)
	f.setScript(func(c geminiCall) bool {
		if hang.Load() && c.req.grounded() && researchQuery(c.req.prompt()) == query {
			hangUntilGone(c.r)
			return true
		}
		return false
	})
	return hang
}

func (f *fakeGemini) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := f.add(r, body)
	m := geminiPath.FindStringSubmatch(r.URL.Path)
	if r.Method != http.MethodPost || m == nil {
		fakeproviders.WriteJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": 404, "message": "no such method " + r.URL.Path, "status": "NOT_FOUND"}})
		return
	}
	if r.Header.Get("x-goog-api-key") != f.key {
		fakeproviders.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400,
			"message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
			"details": []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}}}})
		return
	}
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		fakeproviders.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "message": err.Error(), "status": "INVALID_ARGUMENT"}})
		return
	}
	c := geminiCall{n: n, model: m[1], stream: m[2] == "streamGenerateContent", req: req, w: w, r: r}
	if c.stream && r.URL.Query().Get("alt") != "sse" {
		fakeproviders.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "message": "this fake streams SSE only", "status": "INVALID_ARGUMENT"}})
		return
	}
	f.mu.Lock()
	script := f.script
	f.mu.Unlock()
	if script != nil && script(c) {
		return
	}
	f.deepResearch(c)
}

// deepResearch is the default script: two German queries, grounded
// summaries with non-ASCII text, a reflection asking for one follow-up and
// then one saying enough, and an answer copying the markers plus one
// invented link.
func (f *fakeGemini) deepResearch(c geminiCall) {
	switch {
	case c.req.schemaHas("query"):
		f.reply(c, `{"rationale": "Zwei Aspekte.", "query": ["Euro 2024 Sieger", "Euro 2024 Torschützenkönig"]}`, nil)
	case c.req.schemaHas("is_sufficient"):
		f.mu.Lock()
		f.reflections++
		first := f.reflections == 1
		f.mu.Unlock()
		if first {
			f.reply(c, `{"is_sufficient": false, "knowledge_gap": "Die Anzahl der Tore fehlt.", "follow_up_queries": ["Euro 2024 Tore Anzahl"]}`, nil)
		} else {
			f.reply(c, fakeproviders.SufficientReflection, nil)
		}
	case c.req.grounded():
		q := researchQuery(c.req.prompt())
		text, meta := f.grounding(q)
		f.reply(c, text, meta)
	default:
		f.reply(c, answerFrom(c.req.prompt(), "Spanien gewann die Euro 2024; mehrere Spieler teilten sich die Torjägerkrone."), nil)
	}
}

// researchQuery pulls the query out of a web research prompt.
func researchQuery(prompt string) string {
	m := regexp.MustCompile(`information about "([^"]*)"`).FindStringSubmatch(prompt)
	if m == nil {
		return "?"
	}
	return m[1]
}

// grounding builds a grounded reply for q: two sentences (accented Latin
// and Chinese) supported by two chunks, with UTF-8 byte offsets and the
// first segment's startIndex omitted, as the API does when it is 0.
func (f *fakeGemini) grounding(q string) (string, map[string]any) {
	slug := strings.NewReplacer(" ", "-", "ü", "ue", "ö", "oe").Replace(strings.ToLower(q))
	s1 := fmt.Sprintf("Zu „%s“: Spanien gewann das Finale 2:1 gegen England.", q)
	s2 := "球队在柏林夺冠。"
	text := s1 + " " + s2
	uri1 := "https://vertexaisearch.cloud.google.com/grounding-api-redirect/" + slug + "-uefa"
	uri2 := "https://vertexaisearch.cloud.google.com/grounding-api-redirect/" + slug + "-kicker"
	f.mu.Lock()
	f.chunkURIs[uri1], f.chunkURIs[uri2] = true, true
	f.mu.Unlock()
	start2 := len(s1) + 1
	meta := map[string]any{
		"webSearchQueries": []string{q},
		"searchEntryPoint": map[string]any{"renderedContent": "<div>" + q + "</div>"},
		"groundingChunks": []any{
			map[string]any{"web": map[string]any{"uri": uri1, "title": "uefa.com"}},
			map[string]any{"web": map[string]any{"uri": uri2, "title": "kicker.de"}},
		},
		"groundingSupports": []any{
			map[string]any{"segment": map[string]any{"endIndex": len(s1), "text": s1}, "groundingChunkIndices": []int{0}, "confidenceScores": []float64{0.9}},
			map[string]any{"segment": map[string]any{"startIndex": start2, "endIndex": start2 + len(s2), "text": s2}, "groundingChunkIndices": []int{0, 1}},
		},
	}
	return text, meta
}

func (f *fakeGemini) uris() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for k := range f.chunkURIs {
		out[k] = true
	}
	return out
}

// reply answers c with text (and grounding metadata), unary or as SSE.
func (f *fakeGemini) reply(c geminiCall, text string, grounding map[string]any) {
	usage := map[string]any{"promptTokenCount": 120, "candidatesTokenCount": 40, "totalTokenCount": 160}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}
	if grounding != nil {
		cand["groundingMetadata"] = grounding
	}
	if !c.stream {
		fakeproviders.WriteJSON(c.w, http.StatusOK, map[string]any{"candidates": []any{cand}, "usageMetadata": usage, "modelVersion": c.model + "-001"})
		return
	}
	c.w.Header().Set("Content-Type", "text/event-stream")
	c.w.WriteHeader(http.StatusOK)
	fl, _ := c.w.(http.Flusher)
	// The text in two chunks, then the finish with usage.
	first, second := fakeproviders.SplitHalf(text)
	chunks := []map[string]any{
		{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": first}}}, "index": 0}}, "modelVersion": c.model + "-001"},
		{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": second}}}, "index": 0}}, "modelVersion": c.model + "-001"},
		{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": ""}}}, "finishReason": "STOP", "index": 0}}, "usageMetadata": usage, "modelVersion": c.model + "-001"},
	}
	if grounding != nil {
		chunks[2]["candidates"].([]any)[0].(map[string]any)["groundingMetadata"] = grounding
	}
	for _, ch := range chunks {
		b, _ := json.Marshal(ch)
		_, _ = fmt.Fprintf(c.w, "data: %s\r\n\r\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
}

// answerFrom writes a final answer: lead, then every citation marker found
// in the summaries part of the prompt (the prompt's own example above it is
// not a marker to copy), plus one invented link that must be dropped.
func answerFrom(prompt, lead string) string {
	markers := fakeproviders.CitationMarkers(prompt)
	if len(markers) == 0 {
		return "Dazu wurde nichts gefunden: the search found nothing about this question."
	}
	return lead + " " + strings.Join(markers, " ") + " Mehr unter [erfunden](https://vertexaisearch.cloud.google.com/id/99-99) und [fremd](https://evil.example/track)."
}

// ---------------------------------------------------------------- OpenAI

// openaiRequest is the part of a chat completions body the fake reads,
// with its methods under the names the scripts use.
type openaiRequest struct{ fakeproviders.ChatRequest }

func (o openaiRequest) prompt() string { return o.Prompt() }

func (o openaiRequest) schema() string { return o.Schema() }

// toolResults are the texts of the tool messages so far (agent scripts).
func (o openaiRequest) toolResults() []string { return o.ToolResults() }

// oaReply is what an OpenAI script answers.
type oaReply struct {
	Content   string
	ToolCalls []oaCall
	// Status, when not 0 or 200, answers with that status, ErrBody and
	// Header instead.
	Status  int
	ErrBody string
	Header  map[string]string
	Hang    bool
}

type oaCall struct{ Name, Args string }

type oaCallCtx struct {
	n   int
	req openaiRequest
	r   *http.Request
}

// fakeOpenAI speaks the OpenAI chat completions protocol (POST
// /v1/chat/completions, Bearer key, json_schema structured output, SSE
// streaming with usage, streamed tool calls).
type fakeOpenAI struct {
	srv *httptest.Server
	recorder
	key    string
	script func(c oaCallCtx) oaReply
}

func newFakeOpenAI(t testing.TB, script func(c oaCallCtx) oaReply) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{key: openaiKey, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOpenAI) baseURL() string { return f.srv.URL + "/v1" }

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := f.add(r, body)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		fakeproviders.WriteOpenAIError(w, http.StatusNotFound, "unknown path "+r.URL.Path)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		fakeproviders.WriteJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
			"message": "Incorrect API key provided: " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + ". You can find your API key at https://platform.openai.com/account/api-keys.",
			"type":    "invalid_request_error", "param": nil, "code": "invalid_api_key"}})
		return
	}
	var req openaiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		fakeproviders.WriteOpenAIError(w, http.StatusBadRequest, err.Error())
		return
	}
	// OpenAI's request rules, as OpenAI enforces them: a request that
	// breaks one fails the way it would against the real API.
	if msg := req.CheckRequestRules(); msg != "" {
		fakeproviders.WriteOpenAIError(w, http.StatusBadRequest, msg)
		return
	}
	rep := f.script(oaCallCtx{n: n, req: req, r: r})
	switch {
	case rep.Hang:
		hangUntilGone(r)
		return
	case rep.Status != 0 && rep.Status != http.StatusOK:
		for k, v := range rep.Header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		_, _ = io.WriteString(w, rep.ErrBody)
		return
	}
	c := fakeproviders.Completion{ID: fmt.Sprintf("chatcmpl-%d", n), Model: req.Model, Content: rep.Content, Stream: req.Stream}
	for i, call := range rep.ToolCalls {
		c.ToolCalls = append(c.ToolCalls, fakeproviders.ToolCall{ID: fmt.Sprintf("call_%d_%d", n, i), Name: call.Name, Args: call.Args})
	}
	fakeproviders.WriteCompletion(w, c)
}

// searchResearchScript is the default research script for a model behind a
// search back end: one or two queries, summaries citing every source label,
// a reflection saying enough, an answer copying the markers.
func searchResearchScript(queries ...string) func(c oaCallCtx) oaReply {
	if len(queries) == 0 {
		queries = []string{"raft leader election", "raft log replication"}
	}
	return func(c oaCallCtx) oaReply {
		p := c.req.prompt()
		switch c.req.schema() {
		case "SearchQueryList":
			b, _ := json.Marshal(map[string]any{"rationale": "two aspects", "query": queries})
			return oaReply{Content: string(b)}
		case "Reflection":
			return oaReply{Content: fakeproviders.SufficientReflection}
		}
		if strings.Contains(p, `<source label="S`) {
			return oaReply{Content: fakeproviders.CiteSources(p, "Fact %d from the sources [%s].")}
		}
		return oaReply{Content: answerFrom(p, "Raft elects a leader by randomized timeouts and replicates its log.")}
	}
}

// ------------------------------------------------------- SearXNG and web

// fakeSearXNG answers GET /search?q=…&format=json with results pointing at
// pages of web (or with what respond says).
type fakeSearXNG struct {
	srv *httptest.Server
	recorder
	mu   sync.Mutex
	urls map[string]bool // every result URL returned
	// respond overrides the answer: status and body; 0 means the default.
	respond func(q string) (int, any)
	web     string
}

func newFakeSearXNG(t testing.TB, webURL string) *fakeSearXNG {
	t.Helper()
	f := &fakeSearXNG{urls: map[string]bool{}, web: webURL}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSearXNG) serve(w http.ResponseWriter, r *http.Request) {
	f.add(r, nil)
	if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
		fakeproviders.WriteSearXNGNoJSON(w)
		return
	}
	q := r.URL.Query().Get("q")
	f.mu.Lock()
	respond := f.respond
	f.mu.Unlock()
	if respond != nil {
		if status, body := respond(q); status != 0 {
			fakeproviders.WriteJSON(w, status, body)
			return
		}
	}
	if r.URL.Query().Get("pageno") != "" && r.URL.Query().Get("pageno") != "1" {
		fakeproviders.WriteSearXNGLaterPage(w, q)
		return
	}
	slug := strings.ReplaceAll(strings.ToLower(q), " ", "-")
	var results []any
	f.mu.Lock()
	for i := 1; i <= 3; i++ {
		u := fmt.Sprintf("%s/page/%s/%d", f.web, slug, i)
		f.urls[u] = true
		res := fakeproviders.SearXNGResult(u, q, fmt.Sprintf("SNIPPET-%d for %s.", i, q), i)
		res["parsed_url"] = []string{"http", "127.0.0.1", "/page"}
		results = append(results, res)
	}
	f.mu.Unlock()
	fakeproviders.WriteSearXNG(w, q, results)
}

// setRespond replaces the default answer (see respond).
func (f *fakeSearXNG) setRespond(fn func(q string) (int, any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.respond = fn
}

func (f *fakeSearXNG) returned() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for k := range f.urls {
		out[k] = true
	}
	return out
}

// newFakeWeb serves HTML pages whose text carries PAGE-CONTENT markers.
func newFakeWeb(t testing.TB) (*httptest.Server, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(r, nil)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>Fake page %s</title></head><body><nav>menu</nav><article><h1>Fake page</h1>
<p>PAGE-CONTENT of %s: the leader is elected when a follower's randomized election timeout expires and it wins a majority of votes.</p>
<p>Followers replicate the leader's log entries and acknowledge them; an entry is committed once a majority stores it.</p>
</article></body></html>`, r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

// searchesFor counts the searches of query the fake SearXNG received (their
// first pages).
func searchesFor(sx *fakeSearXNG, query string) int {
	n := 0
	for _, r := range sx.all() {
		if v, err := url.ParseQuery(r.RawQuery); err == nil && v.Get("q") == query && (v.Get("pageno") == "" || v.Get("pageno") == "1") {
			n++
		}
	}
	return n
}
