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

	"github.com/deepgraph/deepgraph/internal/fakeproviders"
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
		fakeproviders.WriteJSON(w, http.StatusOK, urls)
	case r.URL.Path == "/_fake/stats":
		fakeproviders.WriteJSON(w, http.StatusOK, f.stats())
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

// ---------------------------------------------------------------- model

var (
	// The question, as each prompt of the research graph states it.
	topicRe      = regexp.MustCompile(`\nTopic: ([^\n]*)`) // the last one; the first is the prompt's example
	summaryForRe = regexp.MustCompile(`search query "([^"\n]*)"\. The summary feeds a report that answers: ([^\n]*)`)
	reflectForRe = regexp.MustCompile(`gathered to answer: "([^\n]*)"\.\n`)
	answerForRe  = regexp.MustCompile(`(?s)\nUser context:\n(.*?)\n\nSummaries:`)
	searchedRe   = regexp.MustCompile(`(?s)\nQueries already searched:\n(.*?)\n\n`)
)

// kind classifies a request of the research graph and names its question.
func kind(c fakeproviders.ChatRequest, p string) (k, question string) {
	switch c.Schema() {
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
		fakeproviders.WriteOpenAIError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	if f.o.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+f.o.apiKey {
		fakeproviders.WriteJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
			"message": "Incorrect API key provided (the fake wants --api-key).", "type": "invalid_request_error", "code": "invalid_api_key"}})
		return
	}
	var req fakeproviders.ChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		fakeproviders.WriteOpenAIError(w, http.StatusBadRequest, err.Error())
		return
	}
	p := req.Prompt()
	k, question := kind(req, p)
	key := k + "/" + shortHash(question) + "/" + shortHash(req.Model, req.Schema(), p)

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
func (f *fake) answer(req fakeproviders.ChatRequest, k, question, p string) string {
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
		return fakeproviders.SufficientReflection
	case "summary":
		if s := fakeproviders.CiteSources(p, "Fact %d about the query from the sources [%s]."); s != "" {
			return s
		}
		return "The sources do not cover this query."
	case "answer":
		markers := fakeproviders.CitationMarkers(p)
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
func (f *fake) reply(w http.ResponseWriter, req fakeproviders.ChatRequest, n int, content string) {
	c := fakeproviders.Completion{ID: fmt.Sprintf("chatcmpl-fake-%d", n), Model: req.Model, Content: content, Stream: req.Stream}
	if req.Stream {
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		c.Created = time.Now().Unix()
	}
	fakeproviders.WriteCompletion(w, c)
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
		fakeproviders.WriteSearXNGNoJSON(w)
		return
	}
	if !sleep(r, f.o.searchLatency) {
		return
	}
	q := r.URL.Query().Get("q")
	if p := r.URL.Query().Get("pageno"); p != "" && p != "1" {
		fakeproviders.WriteSearXNGLaterPage(w, q)
		return
	}
	s := slug(q)
	results := make([]any, 0, resultsPerQuery)
	f.mu.Lock()
	for i := 1; i <= resultsPerQuery; i++ {
		u := fmt.Sprintf("%s/page/%s/%d", f.base, s, i)
		f.urls[u] = true
		results = append(results, fakeproviders.SearXNGResult(u, q, fmt.Sprintf("Snippet %d for %s.", i, q), i))
	}
	f.mu.Unlock()
	fakeproviders.WriteSearXNG(w, q, results)
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
