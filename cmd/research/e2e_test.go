package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	// citationRe finds the numbered citations of a final answer.
	citationRe = regexp.MustCompile(`\[(\d+)\]\((https?://[^)\s]+)\)`)
	// sourceLineRe finds the entries of the Sources list.
	sourceLineRe = regexp.MustCompile(`(?m)^(\d+)\. \[[^\n]*\]\((https?://[^)\s]+)\)$`)
	// timelineRe is the shape of every timeline line.
	timelineRe = regexp.MustCompile(`^\[\s*\d+\.\ds\s+[\d.]+[kM]? tok\] \S`)
)

// splitReport separates a Markdown report into its answer and its Sources
// list.
func splitReport(t *testing.T, md string) (answer, sources string) {
	t.Helper()
	i := strings.Index(md, "\n## Sources\n")
	require.GreaterOrEqual(t, i, 0, "the report has no Sources list:\n%s", md)
	return md[:i], md[i:]
}

// assertCitations checks the report's citations: numbered from 1, each
// number's URL is the Sources entry's URL, and every URL is one of allowed.
func assertCitations(t *testing.T, md string, allowed map[string]bool) {
	t.Helper()
	answer, sources := splitReport(t, md)
	cites := citationRe.FindAllStringSubmatch(answer, -1)
	require.NotEmpty(t, cites, "the answer cites nothing:\n%s", answer)
	entries := sourceLineRe.FindAllStringSubmatch(sources, -1)
	require.NotEmpty(t, entries, "empty Sources list:\n%s", sources)
	byNumber := map[string]string{}
	for i, e := range entries {
		assert.Equal(t, strings.TrimSpace(e[1]), itoa(i+1), "Sources are numbered in order")
		byNumber[e[1]] = e[2]
		assert.True(t, allowed[e[2]], "source %s was never returned by the fake", e[2])
	}
	for _, c := range cites {
		url, ok := byNumber[c[1]]
		if assert.True(t, ok, "citation [%s] has no Sources entry", c[1]) {
			assert.Equal(t, url, c[2], "citation [%s] points elsewhere than its source", c[1])
		}
		assert.True(t, allowed[c[2]], "cited %s, which was never retrieved", c[2])
	}
	assert.NotContains(t, md, "vertexaisearch.cloud.google.com/id/", "a short URL survived")
	assert.NotContains(t, md, "evil.example", "an invented link survived")
}

func itoa(n int) string { return strconv.Itoa(n) }

// timelineLines returns the stderr lines that belong to the timeline and
// checks their shape.
func timelineLines(t *testing.T, stderr string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "[") {
			assert.Regexp(t, timelineRe, l)
			out = append(out, l)
		}
	}
	return out
}

func assertInOrder(t *testing.T, s string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(s[at:], p)
		if !assert.GreaterOrEqual(t, i, 0, "missing (in order) %q in:\n%s", p, s) {
			return
		}
		at += i + len(p)
	}
}

func geminiEnv(t *testing.T, g *fakeGemini, extra map[string]string) []string {
	vars := map[string]string{"GEMINI_API_KEY": geminiKey, "GOOGLE_GEMINI_BASE_URL": g.srv.URL}
	for k, v := range extra {
		vars[k] = v
	}
	return env(t, vars)
}

func TestE2EGeminiGrounding(t *testing.T) {
	g := newFakeGemini(t)
	res := run(t, geminiEnv(t, g, nil), "Wer gewann die Euro 2024 und wer schoss die meisten Tore?")
	require.Equal(t, 0, res.code, res)

	// The report: the answer in the question's language with numbered
	// citations of grounding chunks only, then the Sources list.
	assert.Contains(t, res.stdout, "Spanien gewann die Euro 2024")
	assert.Contains(t, res.stdout, "## Sources")
	assertCitations(t, res.stdout, g.uris())

	// The timeline.
	lines := timelineLines(t, res.stderr)
	require.NotEmpty(t, lines, res)
	assertInOrder(t, res.stderr,
		"Researching the web with Gemini's Google Search grounding using gemini:gemini-2.5-flash",
		"Generating search queries",
		`Queries: "Euro 2024 Sieger" · "Euro 2024 Torschützenkönig"`,
		"Reflection 1: not sufficient — gap: Die Anzahl der Tore fehlt.; follow-ups: \"Euro 2024 Tore Anzahl\"",
		`Searched "Euro 2024 Tore Anzahl": 2 sources (`,
		"Reflection 2: sufficient",
		"Finalizing the answer",
		"Answer: ",
		"Done in ")
	assert.Contains(t, res.stderr, `Searched "Euro 2024 Sieger": 2 sources (`)
	assert.Contains(t, res.stderr, `Searched "Euro 2024 Torschützenkönig": 2 sources (`)
	assert.Regexp(t, `Answer: \d+ sources cited, 2 citations dropped`, res.stderr, "the invented short URL and the foreign link")
	assert.Regexp(t, `Done in \d+\.\ds · [\d,]+ tokens · 7 LLM calls · \d+ sources cited · 2 citations dropped`, res.stderr)
	// Tokens so far grow along the timeline.
	assert.Regexp(t, `\[\s*\d+\.\ds\s+0 tok\] Generating search queries`, res.stderr)
	assert.Regexp(t, `\[\s*\d+\.\ds\s+160 tok\] Queries:`, res.stderr)

	// The wire: every request carried the key header; the queries and
	// reflections asked for JSON schemas, the research calls for Google
	// Search, the answer streamed.
	var grounded, structured, streamed int
	for _, r := range g.all() {
		assert.Equal(t, geminiKey, r.Header.Get("x-goog-api-key"))
		assert.Regexp(t, `^/v1beta/models/gemini-2\.5-flash:(generateContent|streamGenerateContent)$`, r.Path)
		var req geminiRequest
		require.NoError(t, json.Unmarshal(r.Body, &req))
		switch {
		case req.grounded():
			grounded++
		case req.GenerationConfig.ResponseJSONSchema != nil:
			structured++
			assert.Equal(t, "application/json", req.GenerationConfig.ResponseMIMEType)
		}
		if strings.HasSuffix(r.Path, ":streamGenerateContent") {
			streamed++
			assert.Equal(t, "alt=sse", r.RawQuery)
		}
	}
	assert.Equal(t, 3, grounded, "two queries and one follow-up")
	assert.Equal(t, 3, structured, "one query list and two reflections")
	assert.GreaterOrEqual(t, streamed, 1, "the answer streams")
	assert.NotContains(t, res.all(), geminiKey)
}

func searchSetup(t testing.TB) (*fakeOpenAI, *fakeSearXNG, *recorder, map[string]string) {
	t.Helper()
	web, webRec := newFakeWeb(t)
	sx := newFakeSearXNG(t, web.URL)
	oa := newFakeOpenAI(t, searchResearchScript())
	vars := map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "SEARXNG_URL": sx.srv.URL}
	return oa, sx, webRec, vars
}

// summarizerPrompts returns the prompts of the summarising calls.
func summarizerPrompts(t *testing.T, oa *fakeOpenAI) []string {
	t.Helper()
	var out []string
	for _, r := range oa.all() {
		var req openaiRequest
		require.NoError(t, json.Unmarshal(r.Body, &req))
		if p := req.prompt(); strings.Contains(p, `<source label="S`) {
			out = append(out, p)
		}
	}
	return out
}

func TestE2EOpenAIWithSearXNG(t *testing.T) {
	for _, allow := range []bool{true, false} {
		name := "private pages read with --allow-private-urls"
		if !allow {
			name = "private pages refused by the SSRF guard"
		}
		t.Run(name, func(t *testing.T) {
			oa, sx, webRec, vars := searchSetup(t)
			args := []string{"-v", "--model", "openai:gpt-4.1-mini", "--loops", "1", "How does Raft elect a leader?"}
			if allow {
				args = append([]string{"--allow-private-urls"}, args...)
			}
			res := run(t, env(t, vars), args...)
			require.Equal(t, 0, res.code, res)

			assertCitations(t, res.stdout, sx.returned())
			assertInOrder(t, res.stderr,
				"Researching the web with searxng using openai:gpt-4.1-mini",
				"Generating search queries",
				`Queries: "raft leader election" · "raft log replication"`,
				"Reflection 1: sufficient",
				"Finalizing the answer",
				"Done in ")
			assert.Contains(t, res.stderr, `Searched "raft leader election": 3 sources (127.0.0.1)`)
			assert.Contains(t, res.stderr, `Searched "raft log replication": 3 sources (127.0.0.1)`)
			timelineLines(t, res.stderr)

			prompts := summarizerPrompts(t, oa)
			require.Len(t, prompts, 2)
			joined := strings.Join(prompts, "\n")
			if allow {
				assert.Equal(t, 6, webRec.count(), "the top three results of each query were read")
				assert.Contains(t, joined, "PAGE-CONTENT of /page/raft-leader-election/1")
			} else {
				assert.Equal(t, 0, webRec.count(), "no page may be fetched from a loopback address")
				assert.NotContains(t, joined, "PAGE-CONTENT")
				assert.Contains(t, joined, "SNIPPET-1 for raft leader election.")
				assert.Contains(t, res.stderr, "reading a search result failed")
				assert.Contains(t, res.stderr, "loopback")
			}
			for _, r := range oa.all() {
				assert.Equal(t, "Bearer "+openaiKey, r.Header.Get("Authorization"))
			}
			var schemas []string
			for _, r := range oa.all() {
				var req openaiRequest
				require.NoError(t, json.Unmarshal(r.Body, &req))
				if s := req.schema(); s != "" {
					assert.Equal(t, "json_schema", req.ResponseFormat.Type)
					schemas = append(schemas, s)
				}
			}
			assert.ElementsMatch(t, []string{"SearchQueryList", "Reflection"}, schemas)
			for _, r := range sx.all() {
				assert.Equal(t, "json", strings.Split(strings.Split(r.RawQuery+"&", "format=")[1], "&")[0])
			}
			assert.NotContains(t, res.all(), openaiKey)
		})
	}
}

func TestE2EJSONFormat(t *testing.T) {
	_, sx, _, vars := searchSetup(t)
	out := filepath.Join(t.TempDir(), "report.json")
	for _, toFile := range []bool{false, true} {
		args := []string{"--format", "json", "--model", "openai:gpt-4.1-mini", "--effort", "low", "Raft?"}
		if toFile {
			args = append([]string{"--out", out}, args...)
		}
		res := run(t, env(t, vars), args...)
		require.Equal(t, 0, res.code, res)
		data := []byte(res.stdout)
		if toFile {
			assert.Empty(t, res.stdout)
			var err error
			data, err = os.ReadFile(out)
			require.NoError(t, err)
		}
		var doc map[string]any
		require.NoError(t, json.Unmarshal(data, &doc), "stdout is one JSON document:\n%s", data)

		want := map[string]string{
			"schema": "string", "question": "string", "answer": "string", "markdown": "string", "sources": "array",
			"sources_gathered": "number", "dropped_citations": "number", "queries": "array", "loops": "number", "warnings": "array",
			"backend": "string", "models": "object", "usage": "object", "usage_total": "object", "timings": "object",
			"incomplete": "bool",
		}
		for k, typ := range want {
			assert.Equal(t, typ, jsonType(doc[k]), "field %s", k)
		}
		assert.NotContains(t, doc, "error")
		assert.Equal(t, "deepgraph.research.report/v2", doc["schema"])
		assert.Equal(t, "Raft?", doc["question"])
		assert.Equal(t, false, doc["incomplete"])
		assert.Equal(t, "search:searxng", doc["backend"])
		assert.Equal(t, float64(1), doc["loops"])
		assert.Equal(t, []any{"raft leader election"}, doc["queries"], "effort low: one query")
		assert.Contains(t, doc["markdown"], "## Sources")

		sources := doc["sources"].([]any)
		require.NotEmpty(t, sources)
		for i, s := range sources {
			src := s.(map[string]any)
			assert.Equal(t, float64(i+1), src["number"])
			for _, k := range []string{"title", "url", "label"} {
				assert.Equal(t, "string", jsonType(src[k]), "source field %s", k)
			}
			assert.True(t, sx.returned()[src["url"].(string)])
		}
		models := doc["models"].(map[string]any)
		for _, role := range []string{"query", "research", "reflection", "answer"} {
			assert.Equal(t, "openai:gpt-4.1-mini", models[role])
			u, ok := doc["usage"].(map[string]any)[role].(map[string]any)
			require.True(t, ok, "usage of %s", role)
			for _, k := range []string{"calls", "failed", "prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "reasoning_tokens"} {
				assert.Equal(t, "number", jsonType(u[k]), "usage.%s.%s", role, k)
			}
			assert.GreaterOrEqual(t, u["calls"], float64(1))
		}
		total := doc["usage_total"].(map[string]any)
		assert.Equal(t, float64(4), total["calls"], "query, research, reflection, answer")
		assert.Equal(t, float64(4*130), total["total_tokens"])
		timings := doc["timings"].(map[string]any)
		assert.Equal(t, "number", jsonType(timings["total_ms"]))
		steps := timings["steps"].([]any)
		var nodes []any
		for _, s := range steps {
			st := s.(map[string]any)
			nodes = append(nodes, st["node"])
			assert.Equal(t, "number", jsonType(st["tasks"]))
			assert.Equal(t, "number", jsonType(st["ms"]))
		}
		assert.Equal(t, []any{"generate_query", "web_research", "reflection", "finalize_answer"}, nodes)
		assert.Contains(t, res.stderr, "Done in ", "the timeline still goes to stderr")
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return "?"
}

func TestE2EAuthErrors(t *testing.T) {
	const wrong = "wrong-key-0123456789abcdef"
	t.Run("gemini key from GOOGLE_API_KEY", func(t *testing.T) {
		g := newFakeGemini(t)
		res := run(t, env(t, map[string]string{"GOOGLE_API_KEY": wrong, "GOOGLE_GEMINI_BASE_URL": g.srv.URL}), "q?")
		require.Equal(t, 1, res.code, res)
		assert.Contains(t, res.stderr, "GOOGLE_API_KEY was rejected")
		assert.Contains(t, res.stderr, "hint: check the key")
		assert.NotContains(t, res.all(), wrong)
		assert.Empty(t, res.stdout, "nothing was gathered, so no report")
	})
	t.Run("openai key echoed back by the server", func(t *testing.T) {
		_, _, _, vars := searchSetup(t)
		vars["OPENAI_API_KEY"] = wrong
		res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "q?")
		require.Equal(t, 1, res.code, res)
		assert.Contains(t, res.stderr, "OPENAI_API_KEY was rejected")
		assert.NotContains(t, res.all(), wrong)
	})
	t.Run("key from the config file is named by its key", func(t *testing.T) {
		g := newFakeGemini(t)
		e := env(t, map[string]string{"GOOGLE_GEMINI_BASE_URL": g.srv.URL})
		cfgFile := filepath.Join(t.TempDir(), "c.yaml")
		require.NoError(t, os.WriteFile(cfgFile, []byte("gemini_api_key: "+wrong+"\n"), 0o600))
		res := run(t, e, "--config", cfgFile, "q?")
		require.Equal(t, 1, res.code, res)
		assert.Contains(t, res.stderr, "gemini_api_key was rejected")
		assert.NotContains(t, res.all(), wrong)
	})
}

func TestE2ERateLimits(t *testing.T) {
	rateLimited := oaReply{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "0.2"},
		ErrBody: `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`}
	t.Run("a short storm is ridden out per Retry-After", func(t *testing.T) {
		_, _, _, vars := searchSetup(t)
		script := searchResearchScript()
		oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
			if c.n <= 2 {
				return rateLimited
			}
			return script(c)
		})
		vars["OPENAI_BASE_URL"] = oa.baseURL()
		res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--loops", "1", "Raft?")
		require.Equal(t, 0, res.code, res)
		assert.GreaterOrEqual(t, res.elapsed, 400*time.Millisecond, "two waits of Retry-After 0.2s")
		assert.Contains(t, res.stdout, "## Sources")
	})
	t.Run("a storm that does not end", func(t *testing.T) {
		_, _, _, vars := searchSetup(t)
		oa := newFakeOpenAI(t, func(oaCallCtx) oaReply { return rateLimited })
		vars["OPENAI_BASE_URL"] = oa.baseURL()
		res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--retries", "1", "Raft?")
		require.Equal(t, 1, res.code, res)
		assert.Equal(t, 2, oa.count(),
			"the first try and one retry: one budget per call, which generate_query's node retries do not multiply (llm.IsFinal)")
		assert.Contains(t, res.stderr, "generate_query failed:")
		assert.Contains(t, res.stderr, "429")
		assert.Contains(t, res.stderr, "hint: the provider is rate limiting")
	})
	t.Run("--retries 0 retries nothing, in the nodes either", func(t *testing.T) {
		_, _, _, vars := searchSetup(t)
		oa := newFakeOpenAI(t, func(oaCallCtx) oaReply { return rateLimited })
		vars["OPENAI_BASE_URL"] = oa.baseURL()
		res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--retries", "0", "Raft?")
		require.Equal(t, 1, res.code, res)
		assert.Equal(t, 1, oa.count(), "one request, no retry")
	})
}

func TestE2EMalformedStructuredReply(t *testing.T) {
	for _, fixed := range []bool{true, false} {
		name := "re-asked once, then fine"
		if !fixed {
			name = "still bad after the re-ask"
		}
		t.Run(name, func(t *testing.T) {
			_, _, _, vars := searchSetup(t)
			script := searchResearchScript()
			var asks int
			oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
				if c.req.schema() == "SearchQueryList" {
					asks++
					if asks == 1 || !fixed {
						return oaReply{Content: "Sure! Here are some queries: raft, paxos (no JSON, sorry)"}
					}
				}
				return script(c)
			})
			vars["OPENAI_BASE_URL"] = oa.baseURL()
			res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--loops", "1", "Raft?")
			var queryCalls int
			for _, r := range oa.all() {
				var req openaiRequest
				require.NoError(t, json.Unmarshal(r.Body, &req))
				if req.schema() == "SearchQueryList" {
					queryCalls++
				}
			}
			assert.Equal(t, 2, queryCalls, "one re-ask")
			if fixed {
				require.Equal(t, 0, res.code, res)
				return
			}
			require.Equal(t, 1, res.code, res)
			assert.Contains(t, res.stderr, "no usable SearchQueryList from the model after 2 replies")
			assert.Contains(t, res.stderr, "hint: the model's replies did not match")
		})
	}
}

func TestE2ESearchDown(t *testing.T) {
	oa, sx, _, vars := searchSetup(t)
	sx.setRespond(func(string) (int, any) {
		return http.StatusServiceUnavailable, map[string]any{"error": "maintenance"}
	})
	res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--retries", "0", "Raft?")
	// Every search failed: nothing was found, so the run fails, naming
	// the queries and why.
	require.Equal(t, 1, res.code, res)
	assert.Contains(t, res.stderr, "every search failed (search:searxng)")
	assert.Contains(t, res.stderr, `"raft leader election": `)
	assert.Contains(t, res.stderr, "503")
	assert.Contains(t, res.stderr, "hint: every search failed")
	assert.Positive(t, oa.count())
}

func TestE2ENoResults(t *testing.T) {
	oa, sx, _, vars := searchSetup(t)
	sx.setRespond(func(q string) (int, any) {
		return http.StatusOK, map[string]any{"query": q, "number_of_results": 0, "results": []any{}, "unresponsive_engines": []any{}}
	})
	res := run(t, env(t, vars), "--model", "openai:gpt-4.1-mini", "--loops", "1", "Does the glorbnax exist?")
	// The answer is printed, but a run that cites no source says so and
	// exits 7.
	require.Equal(t, exitNoSources, res.code, res)
	assert.Contains(t, res.stdout, "the search found nothing")
	assert.NotContains(t, res.stdout, "## Sources")
	assert.Contains(t, res.stderr, `Searched "raft leader election": 0 sources`)
	assert.Contains(t, res.stderr, "Answer: no source cited, 0 citations dropped")
	assert.Contains(t, res.stderr, "· no source cited ·")
	assert.Contains(t, res.stderr, "research: the answer above cites no source: nothing was gathered")
	var answerPrompt string
	for _, r := range oa.all() {
		var req openaiRequest
		require.NoError(t, json.Unmarshal(r.Body, &req))
		if strings.Contains(req.prompt(), "Write a well-researched answer") {
			answerPrompt = req.prompt()
		}
	}
	assert.Contains(t, answerPrompt, "found no results")
}

func TestE2ESetupErrors(t *testing.T) {
	t.Run("no model configured", func(t *testing.T) {
		res := run(t, env(t, nil), "q?")
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, "No language model is configured")
		assert.Contains(t, res.stderr, "GEMINI_API_KEY")
		assert.Contains(t, res.stderr, "OLLAMA_HOST")
		assert.Empty(t, res.stdout)
	})
	t.Run("a model without any search", func(t *testing.T) {
		res := run(t, env(t, map[string]string{"OPENAI_API_KEY": openaiKey}), "q?")
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, "No search back end is configured")
		assert.Contains(t, res.stderr, "SEARXNG_URL")
		assert.Contains(t, res.stderr, "--corpus DIR")
	})
	t.Run("bad values", func(t *testing.T) {
		res := run(t, env(t, map[string]string{"GEMINI_API_KEY": geminiKey, "DEEPGRAPH_FORMAT": "pdf"}), "--loops", "-1", "q?")
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, "research: max_research_loops: -1 is not allowed: use a whole number from 1 to 50 (from flag --loops)\n")
		assert.Contains(t, res.stderr, "research: format: pdf is not allowed: use one of markdown, json (from env DEEPGRAPH_FORMAT)\n")
	})
	t.Run("unknown key in the default config file", func(t *testing.T) {
		e := env(t, map[string]string{"GEMINI_API_KEY": geminiKey})
		var cfgDir string
		for _, kv := range e {
			if v, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok {
				cfgDir = filepath.Join(v, "deepgraph")
			}
		}
		require.NoError(t, os.MkdirAll(cfgDir, 0o700))
		file := filepath.Join(cfgDir, "config.yaml")
		require.NoError(t, os.WriteFile(file, []byte("max_reserch_loops: 3\n"), 0o600))
		res := run(t, e, "q?")
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, `unknown key "max_reserch_loops" in `+file+`: did you mean "max_research_loops"?`)
	})
	t.Run("bad flag", func(t *testing.T) {
		res := run(t, env(t, nil), "--no-such-flag", "q?")
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, "unknown flag: --no-such-flag")
	})
	t.Run("no question", func(t *testing.T) {
		res := run(t, env(t, map[string]string{"GEMINI_API_KEY": geminiKey}))
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, "no question")
	})
	t.Run("gemini search with a non-Gemini model", func(t *testing.T) {
		res := run(t, env(t, map[string]string{"OPENAI_API_KEY": openaiKey}), "--search", "gemini", "q?")
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, "needs a Gemini research model")
	})
}

// hangAtReflection makes the fake Gemini hang on the first reflection,
// after the first round of research has finished. The channel it returns
// is closed when the first reflection call has arrived.
func hangAtReflection(g *fakeGemini) <-chan struct{} {
	arrived := make(chan struct{})
	var once sync.Once
	g.setScript(func(c geminiCall) bool {
		if c.req.schemaHas("is_sufficient") {
			once.Do(func() { close(arrived) })
			hangUntilGone(c.r)
			return true
		}
		return false
	})
	return arrived
}

func TestE2EInterrupt(t *testing.T) {
	g := newFakeGemini(t)
	reflecting := hangAtReflection(g)
	// The reflection call hangs until the client goes (or 30 s), and the
	// model timeout is an hour: the run can stop within the 20 s bound
	// below only by Ctrl-C cancelling the call in flight.
	p := startBin(t, geminiEnv(t, g, map[string]string{"DEEPGRAPH_LLM_TIMEOUT": "1h"}), "Wer gewann die Euro 2024?")
	<-reflecting
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	res := p.wait(t, 20*time.Second)
	require.Equal(t, 130, res.code, res)
	assert.Contains(t, res.stdout, "**Incomplete report.**")
	assertCitations(t, res.stdout, g.uris())
	assert.Contains(t, res.stderr, "Stopped (incomplete)")
	assert.Contains(t, res.stderr, "research: interrupted")
}

func TestE2ETimeout(t *testing.T) {
	g := newFakeGemini(t)
	hangAtReflection(g)
	res := run(t, geminiEnv(t, g, nil), "--timeout", "1s", "--format", "json", "Wer gewann die Euro 2024?")
	require.Equal(t, 1, res.code, res)
	assert.Contains(t, res.stderr, "did not finish within the timeout of 1s")
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res)
	assert.Equal(t, true, doc["incomplete"])
	assert.Equal(t, "timed out after 1s", doc["error"])
	assert.NotEmpty(t, doc["sources"])
}

func TestE2ECommands(t *testing.T) {
	t.Run("graph", func(t *testing.T) {
		res := run(t, env(t, nil), "graph")
		require.Equal(t, 0, res.code, res)
		assertInOrder(t, res.stdout, "graph TD;", "generate_query", "web_research", "reflection", "finalize_answer",
			"generate_query -.-> web_research", "reflection -.-> web_research", "reflection -.-> finalize_answer")
	})
	t.Run("config redacts secrets and names sources", func(t *testing.T) {
		e := env(t, map[string]string{"TAVILY_API_KEY": tavilyKey, "GEMINI_API_KEY": geminiKey, "DEEPGRAPH_EFFORT": "high"})
		res := run(t, e, "config", "--queries", "2")
		require.Equal(t, 0, res.code, res)
		assert.NotContains(t, res.all(), tavilyKey)
		assert.NotContains(t, res.all(), geminiKey)
		assert.Regexp(t, `(?m)^tavily_api_key +set \(from TAVILY_API_KEY\)$`, res.stdout)
		assert.Regexp(t, `(?m)^gemini_api_key +set \(from GEMINI_API_KEY\)$`, res.stdout)
		assert.Regexp(t, `(?m)^model +gemini:gemini-2\.5-flash  \(auto: a Gemini key is set\)$`, res.stdout)
		assert.Regexp(t, `(?m)^number_of_initial_queries +2  \(flag --queries\)$`, res.stdout)
		assert.Regexp(t, `(?m)^max_research_loops +10  \(effort high \(env DEEPGRAPH_EFFORT\)\)$`, res.stdout)
		assert.Contains(t, res.stdout, "# search back end: search (tavily), because search is auto and TAVILY_API_KEY is set")
		assert.Contains(t, res.stdout, "# config file: none (looked for ")
	})
	t.Run("config keys", func(t *testing.T) {
		res := run(t, env(t, nil), "config", "keys")
		require.Equal(t, 0, res.code, res)
		for _, k := range []string{"model", "max_research_loops", "agent.workspace", "gemini_api_key"} {
			assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(k)+`$`, res.stdout)
		}
		assert.Contains(t, res.stdout, "env:     DEEPGRAPH_GEMINI_API_KEY, GEMINI_API_KEY, GOOGLE_API_KEY")
	})
	t.Run("version", func(t *testing.T) {
		res := run(t, env(t, nil), "version")
		require.Equal(t, 0, res.code, res)
		assert.Regexp(t, `^research \S+ \(.*go1\.\d+`, res.stdout)
		assert.True(t, strings.HasPrefix(res.stdout, "research "+testVersion+" ("), res.stdout)
	})
}

// agentScript scripts an agent: each think step gets the next reply; the
// last one repeats.
func agentScript(replies ...oaReply) func(c oaCallCtx) oaReply {
	return func(c oaCallCtx) oaReply {
		if len(c.req.Tools) == 0 {
			return oaReply{Content: "Best effort: the file list is incomplete."}
		}
		// Count think steps by assistant messages already in the conversation.
		var steps int
		for _, m := range c.req.Messages {
			if m.Role == "assistant" {
				steps++
			}
		}
		return replies[min(steps, len(replies)-1)]
	}
}

func terminate(status, answer string) oaCall {
	b, _ := json.Marshal(map[string]string{"status": status, "answer": answer})
	return oaCall{Name: "terminate", Args: string(b)}
}

func TestE2EAgent(t *testing.T) {
	create := oaCall{Name: "str_replace_editor", Args: `{"command":"create","path":"hello.txt","file_text":"hello from the agent\n"}`}
	agentEnv := func(t *testing.T, oa *fakeOpenAI) []string {
		return env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	}

	t.Run("creates a file in the workspace and terminates", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(
			oaReply{Content: "I will create the file.", ToolCalls: []oaCall{create}},
			oaReply{ToolCalls: []oaCall{terminate("success", "Created hello.txt with a greeting.")}},
		))
		ws := t.TempDir()
		res := run(t, agentEnv(t, oa), "agent", "--model", "openai:gpt-4.1-mini", "--workspace", ws, "Create hello.txt saying hello")
		require.Equal(t, 0, res.code, res)
		b, err := os.ReadFile(filepath.Join(ws, "hello.txt"))
		require.NoError(t, err)
		assert.Equal(t, "hello from the agent\n", string(b))
		assert.Equal(t, "Created hello.txt with a greeting.\n", res.stdout)
		assertInOrder(t, res.stderr, "Agent using openai:gpt-4.1-mini in workspace ", "Tools: ",
			"Step 1: I will create the file.", `→ str_replace_editor {"command":"create"`, "← str_replace_editor",
			"Step 2", "→ terminate", "Done: success", "Finished: success")
		assert.NotContains(t, res.stderr, "python_execute")

		var req openaiRequest
		require.NoError(t, json.Unmarshal(oa.all()[0].Body, &req))
		var offered []string
		for _, tl := range req.Tools {
			offered = append(offered, tl.Function.Name)
		}
		assert.ElementsMatch(t, []string{"fetch_page", "str_replace_editor", "planning", "ask_human", "terminate"}, offered,
			"no web_search without a search provider, no exec without --allow-exec; ask_human pauses a stored run")

		// A run that is not kept cannot pause: without a terminal, no ask_human.
		oa2 := newFakeOpenAI(t, agentScript(oaReply{ToolCalls: []oaCall{terminate("success", "done")}}))
		res = run(t, agentEnv(t, oa2), "agent", "--no-save", "--model", "openai:gpt-4.1-mini", "--workspace", ws, "Say done")
		require.Equal(t, 0, res.code, res)
		require.NoError(t, json.Unmarshal(oa2.all()[0].Body, &req))
		offered = offered[:0]
		for _, tl := range req.Tools {
			offered = append(offered, tl.Function.Name)
		}
		assert.NotContains(t, offered, "ask_human")
	})
	t.Run("temporary workspace by default", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(
			oaReply{ToolCalls: []oaCall{create}},
			oaReply{ToolCalls: []oaCall{terminate("success", "done")}},
		))
		e := agentEnv(t, oa)
		res := run(t, e, "agent", "--model", "openai:gpt-4.1-mini", "write hello")
		require.Equal(t, 0, res.code, res)
		m := regexp.MustCompile(`in workspace (\S+) \(new; kept after the run\)`).FindStringSubmatch(res.stderr)
		require.NotNil(t, m, res.stderr)
		var tmp string
		for _, kv := range e {
			if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
				tmp = v
			}
		}
		assert.True(t, strings.HasPrefix(m[1], tmp), "%s is under TMPDIR %s", m[1], tmp)
		_, err := os.Stat(filepath.Join(m[1], "hello.txt"))
		assert.NoError(t, err)
	})
	t.Run("gives up: exit 3", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(oaReply{ToolCalls: []oaCall{terminate("failure", "I cannot reach the data source.")}}))
		res := run(t, agentEnv(t, oa), "agent", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "impossible")
		require.Equal(t, 3, res.code, res)
		assert.Equal(t, "I cannot reach the data source.\n", res.stdout)
		assert.Contains(t, res.stderr, "could not complete the task")
	})
	t.Run("step limit: exit 4 with a best-effort answer", func(t *testing.T) {
		var step int
		oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
			if len(c.req.Tools) == 0 {
				return oaReply{Content: "Best effort: two plans were made."}
			}
			step++
			return oaReply{ToolCalls: []oaCall{{Name: "planning", Args: `{"command":"create","plan_id":"p` + itoa(step) + `","title":"Plan","steps":["a","b"]}`}}}
		})
		envv := agentEnv(t, oa)
		res := run(t, envv, "agent", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "--max-steps", "2", "plan forever")
		require.Equal(t, 4, res.code, res)
		assert.Equal(t, "Best effort: two plans were made.\n", res.stdout)
		assert.Contains(t, res.stderr, "step limit (2; raise it with --max-steps)")
		// Each step says what was spent so far (it said nothing).
		assert.Regexp(t, `\[\s*\d+\.\ds\s+[1-9][\d.]*k? tok\] Step 2`, res.stderr)
		// The run is kept as failed, with why: it did not do its task.
		runs := run(t, envv, "runs", "--format", "json")
		require.Equal(t, 0, runs.code, runs)
		var list []struct{ Status, Error string }
		require.NoError(t, json.Unmarshal([]byte(runs.stdout), &list))
		require.Len(t, list, 1)
		assert.Equal(t, "failed", list[0].Status, "a run stopped by its step limit is not done")
		assert.Contains(t, list[0].Error, "step limit (2")
	})
	t.Run("stuck: exit 5", func(t *testing.T) {
		view := oaCall{Name: "str_replace_editor", Args: `{"command":"view","path":"."}`}
		oa := newFakeOpenAI(t, agentScript(oaReply{Content: "Let me look.", ToolCalls: []oaCall{view}}))
		res := run(t, agentEnv(t, oa), "agent", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "look around")
		require.Equal(t, 5, res.code, res)
		assert.Contains(t, res.stderr, "told to change strategy")
		assert.Contains(t, res.stderr, "stuck repeating itself")
	})
	t.Run("refuses the home directory", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(oaReply{Content: "never asked"}))
		e := agentEnv(t, oa)
		var home string
		for _, kv := range e {
			if v, ok := strings.CutPrefix(kv, "HOME="); ok {
				home = v
			}
		}
		res := run(t, e, "agent", "--model", "openai:gpt-4.1-mini", "--workspace", home, "x")
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, "not your home directory")
		assert.Zero(t, oa.count())
	})
	t.Run("exec tools need --allow-exec", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(oaReply{Content: "never asked"}))
		res := run(t, agentEnv(t, oa), "agent", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "--tools", "bash,terminate", "x")
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, "bash also needs --allow-exec")
	})
	t.Run("unknown tool names the available ones", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(oaReply{Content: "never asked"}))
		res := run(t, agentEnv(t, oa), "agent", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "--tools", "teleport", "x")
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, "agent.tools: teleport is not allowed: use names of available tools: fetch_page, str_replace_editor")
	})
}
