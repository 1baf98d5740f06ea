// Command fakeapi is a stand-in for the providers a research run talks to,
// with configurable latency, for load tests and end-to-end scripts (see
// scripts/temporal-e2e.sh). On one loopback port it serves:
//
//   - POST /v1/chat/completions: an OpenAI-compatible chat completions API,
//     unary and streamed ("stream": true, SSE with usage), that plays the
//     research graph's model: the query list (JSON schema SearchQueryList,
//     queries derived from the question), a summary per query citing every
//     source label, a reflection (schema Reflection) saying the research is
//     sufficient (after --follow-ups rounds of follow-up queries), and the
//     final answer copying the citation markers of the summaries plus one
//     invented link the report must drop;
//   - GET /search?q=…&format=json: a SearXNG JSON search whose results point
//     at this server's own /page/SLUG/N;
//   - GET /page/SLUG/N: those pages, as HTML;
//   - GET /_fake/urls: a JSON list of every result URL handed out so far,
//     and GET /_fake/stats: the number of calls of each kind.
//
// Every answer is a function of the request alone, so a repeated model call
// (the same prompt twice) shows a task that ran twice.
//
// Flags: --addr (default 127.0.0.1:0; the chosen address is printed as the
// first stdout line, "fakeapi listening on http://127.0.0.1:PORT"),
// --latency (per model call, default 100ms), --search-latency (default
// 20ms), --page-latency (default 10ms), --api-key (the Bearer key required,
// default sk-fake; "" accepts any), --queries (queries per question, default
// 2), --follow-ups (reflections that ask for one more query, default 0),
// --count-file (appends "METHOD PATH key" per model call; the key is
// KIND/QUESTION/PROMPT, KIND one of queries, summary, reflection, answer or
// other, QUESTION a hash of the question and PROMPT a hash of the whole
// request).
//
// A research process uses it with the environment of scripts/fakeapi/env.sh:
//
//	go run ./scripts/fakeapi --latency 100ms &   # prints its URL
//	FAKEAPI_URL=http://127.0.0.1:PORT . scripts/fakeapi/env.sh
//	go run ./cmd/research "How does Raft elect a leader?"
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fakeapi:", err)
		os.Exit(2)
	}
}

// options are the command-line flags.
type options struct {
	addr          string
	latency       time.Duration
	searchLatency time.Duration
	pageLatency   time.Duration
	apiKey        string
	queries       int
	followUps     int
	countFile     string
}

func run(args []string, stdout io.Writer) error {
	var o options
	fs := flag.NewFlagSet("fakeapi", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "address to listen on")
	fs.DurationVar(&o.latency, "latency", 100*time.Millisecond, "latency of each model call")
	fs.DurationVar(&o.searchLatency, "search-latency", 20*time.Millisecond, "latency of each search")
	fs.DurationVar(&o.pageLatency, "page-latency", 10*time.Millisecond, "latency of each page")
	fs.StringVar(&o.apiKey, "api-key", "sk-fake", `Bearer key the model API requires ("" accepts any)`)
	fs.IntVar(&o.queries, "queries", 2, "search queries the model writes per question")
	fs.IntVar(&o.followUps, "follow-ups", 0, "reflections per question that ask for one more query")
	fs.StringVar(&o.countFile, "count-file", "", `file to append "METHOD PATH key" to for each model call`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.queries < 1 {
		return errors.New("--queries must be at least 1")
	}
	f, err := newFake(o)
	if err != nil {
		return err
	}
	defer f.close()

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	f.base = "http://" + ln.Addr().String()
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "fakeapi listening on %s\n", f.base)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	s := f.stats()
	log.Printf("fakeapi: served %d model calls (%d repeated prompts), %d searches, %d pages",
		s.ModelCalls, s.RepeatedPrompts, s.Searches, s.Pages)
	return nil
}

// fake is the server's state.
type fake struct {
	o    options
	base string // http://host:port

	modelCalls, searches, pages atomic.Int64

	mu      sync.Mutex
	urls    map[string]bool // every result URL handed out
	seen    map[string]int  // model calls per prompt key
	count   *os.File
	callSeq int
}

func newFake(o options) (*fake, error) {
	f := &fake{o: o, urls: map[string]bool{}, seen: map[string]int{}}
	if o.countFile != "" {
		file, err := os.OpenFile(o.countFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		f.count = file
	}
	return f, nil
}

func (f *fake) close() {
	if f.count != nil {
		_ = f.count.Close()
	}
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/chat/completions":
		f.chat(w, r)
	case r.URL.Path == "/search":
		f.search(w, r)
	case strings.HasPrefix(r.URL.Path, "/page/"):
		f.page(w, r)
	case r.URL.Path == "/_fake/urls":
		f.mu.Lock()
		urls := make([]string, 0, len(f.urls))
		for u := range f.urls {
			urls = append(urls, u)
		}
		f.mu.Unlock()
		slices.Sort(urls)
		writeJSON(w, http.StatusOK, urls)
	case r.URL.Path == "/_fake/stats":
		writeJSON(w, http.StatusOK, f.stats())
	case r.URL.Path == "/healthz":
		_, _ = io.WriteString(w, "ok\n")
	default:
		http.NotFound(w, r)
	}
}

// stats are the fake's counters.
type stats struct {
	ModelCalls      int64 `json:"model_calls"`
	DistinctPrompts int   `json:"distinct_prompts"`
	RepeatedPrompts int   `json:"repeated_prompts"` // calls beyond the first of a prompt
	Searches        int64 `json:"searches"`
	Pages           int64 `json:"pages"`
}

func (f *fake) stats() stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := stats{ModelCalls: f.modelCalls.Load(), DistinctPrompts: len(f.seen), Searches: f.searches.Load(), Pages: f.pages.Load()}
	for _, n := range f.seen {
		s.RepeatedPrompts += n - 1
	}
	return s
}

// sleep waits d, or until the client goes away; false when it went.
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ---------------------------------------------------------------- model

// chatRequest is the part of a chat completions body the fake reads.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name string `json:"name"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Stream bool `json:"stream"`
}

// msgText returns a message's text (a string, or an array of text parts).
func msgText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (c chatRequest) prompt() string {
	var b strings.Builder
	for _, m := range c.Messages {
		b.WriteString(msgText(m.Content))
		b.WriteString("\n")
	}
	return b.String()
}

func (c chatRequest) schema() string {
	if c.ResponseFormat == nil || c.ResponseFormat.JSONSchema == nil {
		return ""
	}
	return c.ResponseFormat.JSONSchema.Name
}

var (
	// sourceLabelRe finds the source labels of a summarising prompt.
	sourceLabelRe = regexp.MustCompile(`<source label="(S\d+)"`)
	// markerRe finds the citation markers the answer must copy.
	markerRe = regexp.MustCompile(`\[[^\]\n]+\]\(https://vertexaisearch\.cloud\.google\.com/id/[^)\s]+\)`)
	// The question, as each prompt of the research graph states it.
	topicRe      = regexp.MustCompile(`\nTopic: ([^\n]*)`) // the last one; the first is the prompt's example
	summaryForRe = regexp.MustCompile(`search query "([^"\n]*)"\. The summary feeds a report that answers: ([^\n]*)`)
	reflectForRe = regexp.MustCompile(`gathered to answer: "([^\n]*)"\.\n`)
	answerForRe  = regexp.MustCompile(`(?s)\nUser context:\n(.*?)\n\nSummaries:`)
	searchedRe   = regexp.MustCompile(`(?s)\nQueries already searched:\n(.*?)\n\n`)
)

// kind classifies a request of the research graph and names its question.
func kind(c chatRequest, p string) (k, question string) {
	switch c.schema() {
	case "SearchQueryList":
		if m := topicRe.FindAllStringSubmatch(p, -1); m != nil {
			return "queries", strings.TrimSpace(m[len(m)-1][1])
		}
		return "queries", ""
	case "Reflection":
		if m := reflectForRe.FindStringSubmatch(p); m != nil {
			return "reflection", m[1]
		}
		return "reflection", ""
	}
	if m := summaryForRe.FindStringSubmatch(p); m != nil {
		return "summary", m[2]
	}
	if m := answerForRe.FindStringSubmatch(p); m != nil {
		return "answer", strings.TrimSpace(m[1])
	}
	return "other", ""
}

func shortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func (f *fake) chat(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": map[string]any{"message": "use POST", "type": "invalid_request_error"}})
		return
	}
	if f.o.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+f.o.apiKey {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
			"message": "Incorrect API key provided (the fake wants --api-key).", "type": "invalid_request_error", "code": "invalid_api_key"}})
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": err.Error(), "type": "invalid_request_error"}})
		return
	}
	p := req.prompt()
	k, question := kind(req, p)
	key := k + "/" + shortHash(question) + "/" + shortHash(req.Model, req.schema(), p)

	f.modelCalls.Add(1)
	f.mu.Lock()
	f.seen[key]++
	f.callSeq++
	n := f.callSeq
	if f.count != nil {
		_, _ = fmt.Fprintf(f.count, "%s %s %s\n", r.Method, r.URL.Path, key)
	}
	f.mu.Unlock()

	if !sleep(r, f.o.latency) {
		return
	}
	f.reply(w, req, n, f.answer(req, k, question, p))
}

// answer is the research graph's model, played from the prompt alone.
func (f *fake) answer(req chatRequest, k, question, p string) string {
	switch k {
	case "queries":
		b, _ := json.Marshal(map[string]any{"rationale": "the aspects of the question", "query": queriesFor(question, f.o.queries)})
		return string(b)
	case "reflection":
		searched := 0
		if m := searchedRe.FindStringSubmatch(p); m != nil {
			searched = strings.Count("\n"+m[1], "\n- ")
		}
		if round := searched - f.o.queries; round < f.o.followUps {
			b, _ := json.Marshal(map[string]any{"is_sufficient": false, "knowledge_gap": "More detail is needed.",
				"follow_up_queries": []string{fmt.Sprintf("%s follow-up %d", trimQuestion(question), round+1)}})
			return string(b)
		}
		return `{"is_sufficient": true, "knowledge_gap": "", "follow_up_queries": []}`
	case "summary":
		labels := sourceLabelRe.FindAllStringSubmatch(p, -1)
		if len(labels) == 0 {
			return "The sources do not cover this query."
		}
		var b strings.Builder
		for i, l := range labels {
			fmt.Fprintf(&b, "Fact %d about the query from the sources [%s]. ", i+1, l[1])
		}
		return strings.TrimSpace(b.String())
	case "answer":
		summaries := p
		if i := strings.LastIndex(p, "Summaries:"); i >= 0 {
			summaries = p[i:]
		}
		markers := markerRe.FindAllString(summaries, -1)
		if len(markers) == 0 {
			return "The search found nothing about this question."
		}
		return fmt.Sprintf("The answer to %q, from the sources: %s More at [invented](https://evil.example/track).",
			question, strings.Join(markers, " "))
	}
	return "I am a fake model for the research graph; this request is not one of its prompts."
}

// trimQuestion shortens a question into the stem of a search query.
func trimQuestion(q string) string {
	q = strings.TrimRight(strings.TrimSpace(q), "?!.")
	if len(q) > 80 {
		q = q[:80]
	}
	return q
}

// queriesFor derives n distinct queries from a question.
func queriesFor(question string, n int) []string {
	stem := trimQuestion(question)
	if stem == "" {
		stem = "research"
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s aspect %d", stem, i+1)
	}
	return out
}

// reply writes content as a chat completion, unary or streamed.
func (f *fake) reply(w http.ResponseWriter, req chatRequest, n int, content string) {
	id := fmt.Sprintf("chatcmpl-fake-%d", n)
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	// The text in two chunks, split on a rune boundary.
	half := len(content) / 2
	for half > 0 && half < len(content) && (content[half]&0xC0) == 0x80 {
		half--
	}
	send(chunk(map[string]any{"content": content[:half]}, nil))
	send(chunk(map[string]any{"content": content[half:]}, nil))
	send(chunk(map[string]any{}, "stop"))
	send(map[string]any{"id": id, "object": "chat.completion.chunk", "model": req.Model, "choices": []any{}, "usage": usage})
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// ------------------------------------------------------- search and pages

// resultsPerQuery is the number of results of each search.
const resultsPerQuery = 3

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slug turns a query into a URL path segment.
func slug(q string) string {
	s := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(q), "-"), "-")
	if len(s) > 100 {
		s = s[:100] + "-" + shortHash(q)[:6]
	}
	if s == "" {
		s = "q-" + shortHash(q)[:6]
	}
	return s
}

func (f *fake) search(w http.ResponseWriter, r *http.Request) {
	f.searches.Add(1)
	if r.URL.Query().Get("format") != "json" {
		http.Error(w, "Forbidden: the json format is not enabled", http.StatusForbidden)
		return
	}
	if !sleep(r, f.o.searchLatency) {
		return
	}
	q := r.URL.Query().Get("q")
	if p := r.URL.Query().Get("pageno"); p != "" && p != "1" {
		writeJSON(w, http.StatusOK, map[string]any{"query": q, "number_of_results": 0, "results": []any{}})
		return
	}
	s := slug(q)
	results := make([]any, 0, resultsPerQuery)
	f.mu.Lock()
	for i := 1; i <= resultsPerQuery; i++ {
		u := fmt.Sprintf("%s/page/%s/%d", f.base, s, i)
		f.urls[u] = true
		results = append(results, map[string]any{
			"url": u, "title": fmt.Sprintf("Page %d about %s", i, q), "content": fmt.Sprintf("Snippet %d for %s.", i, q),
			"engine": "duckduckgo", "engines": []string{"duckduckgo", "brave"}, "score": 3.0 - float64(i)/2,
			"category": "general", "positions": []int{i},
		})
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"query": q, "number_of_results": len(results), "results": results,
		"answers": []any{}, "corrections": []any{}, "infoboxes": []any{}, "suggestions": []any{}, "unresponsive_engines": []any{}})
}

var pagePath = regexp.MustCompile(`^/page/([a-z0-9-]+)/(\d+)$`)

func (f *fake) page(w http.ResponseWriter, r *http.Request) {
	f.pages.Add(1)
	m := pagePath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.NotFound(w, r)
		return
	}
	if !sleep(r, f.o.pageLatency) {
		return
	}
	n, _ := strconv.Atoi(m[2])
	topic := strings.ReplaceAll(m[1], "-", " ")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><html><head><title>Page %d about %s</title></head><body><nav>menu</nav><article><h1>Page %d about %s</h1>
<p>PAGE-CONTENT %d of %s: this page explains the topic in enough words for a reader to extract the main text of the article body.</p>
<p>A second paragraph adds a figure, a name and a date, so that the summary has facts to cite: 42 nodes, Ada Lovelace, 1843.</p>
</article><footer>footer</footer></body></html>`, n, topic, n, topic, n, topic)
}
