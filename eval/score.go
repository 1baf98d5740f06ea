package eval

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
)

// Integrity is what the citations point to.
type Integrity struct {
	// Citations counts the citation links of the answer.
	Citations int `json:"citations"`
	// NotGathered lists the cited URLs that are not among the run's
	// gathered sources (the report's Sources): the citation pipeline drops
	// such links, so this must be empty.
	NotGathered []string `json:"not_gathered"`
	// Unreadable lists the cited pages whose text could not be had to judge
	// them: not recorded during the run, and not readable now.
	Unreadable []string `json:"unreadable"`
}

// Claims is the FACT-style judgement of the answer's statements.
type Claims struct {
	Statements []JudgedStatement `json:"statements"`
	// Cited counts the statements with a citation, Uncited those without.
	Cited   int `json:"cited"`
	Uncited int `json:"uncited"`
	// Supported, Unsupported, Contradicted count the cited statements by
	// label; Unreadable those whose every cited page was unreadable.
	Supported    int `json:"supported"`
	Unsupported  int `json:"unsupported"`
	Contradicted int `json:"contradicted"`
	Unreadable   int `json:"unreadable"`
	// Pairs and PairsSupported count the (statement, cited page) pairs
	// judged and those judged supported: citation precision.
	Pairs          int `json:"pairs"`
	PairsSupported int `json:"pairs_supported"`
	// Agreement is the mean share of judge passes that agreed with each
	// pair's label (1 with one pass).
	Agreement float64 `json:"agreement"`
}

// JudgedStatement is a statement with its label and the judgement of each
// page it cites.
type JudgedStatement struct {
	Statement
	// Label is supported when a cited page supports it, else contradicted
	// when one contradicts it, else unsupported; unreadable when no cited
	// page could be read; "" when it cites nothing.
	Label     string      `json:"label,omitempty"`
	Judgments []Judgement `json:"judgments,omitempty"`
}

// Judgement is the label of one (statement, cited page) pair.
type Judgement struct {
	Source int    `json:"source"` // its number in the answer
	URL    string `json:"url"`
	Label  string `json:"label"`
	// Agreement is the share of passes that gave Label.
	Agreement float64 `json:"agreement"`
	// Reasons are the judge's, one per pass.
	Reasons []string `json:"reasons,omitempty"`
	// Passage is the part of the page's text the statement was judged
	// against.
	Passage string `json:"passage,omitempty"`
}

// Correctness is the answer's grade against the reference.
type Correctness struct {
	Verdict   string   `json:"verdict"`
	Score     float64  `json:"score"`
	Agreement float64  `json:"agreement"`
	Reasons   []string `json:"reasons,omitempty"`
}

// Recall is how many of the expected sources the run found.
type Recall struct {
	Expected []string `json:"expected"`
	// Gathered and Cited are the expected sources among those the run
	// gathered, and among those its answer cites.
	Gathered []string `json:"gathered"`
	Cited    []string `json:"cited"`
}

// MetricInfo describes a metric.
type MetricInfo struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Better is "higher", "lower", or "" when neither.
	Better string `json:"better,omitempty"`
	// Unit is "share" (0–1), "usd", "count", "tokens" or "seconds".
	Unit string `json:"unit"`
	// How says how a case's value is computed.
	How string `json:"how"`
}

// The built-in metrics' names.
const (
	MetricCorrectness         = "correctness"
	MetricClaimSupport        = "claim_support"
	MetricContradicted        = "contradicted"
	MetricCitationPrecision   = "citation_precision"
	MetricUncited             = "uncited_share"
	MetricNotGathered         = "citations_not_gathered"
	MetricUnreadable          = "cited_unreadable"
	MetricSourceRecall        = "source_recall"
	MetricCitedRecall         = "cited_source_recall"
	MetricJudgeAgreement      = "judge_agreement"
	MetricFailed              = "failed"
	MetricCost                = "cost_usd"
	MetricTokens              = "tokens"
	MetricPromptTokens        = "prompt_tokens"
	MetricCompletionTokens    = "completion_tokens"
	MetricCachedTokens        = "cached_tokens"
	MetricReasoningTokens     = "reasoning_tokens"
	MetricCalls               = "llm_calls"
	MetricSeconds             = "wall_seconds"
	MetricStatements          = "statements"
	MetricJudgeCost           = "judge_cost_usd"
	MetricJudgeTokens         = "judge_tokens"
	shareUnit, usdUnit, count = "share", "usd", "count"
)

// BuiltinMetrics describes the built-in metrics, in the order the outputs
// show them.
func BuiltinMetrics() []MetricInfo {
	return []MetricInfo{
		{MetricCorrectness, "Correctness", "higher", shareUnit, "The judge grades the answer against the reference answer with the correctness rubric: correct 1, partially correct 0.5, incorrect 0 (majority of the judge passes). Only questions with a reference."},
		{MetricClaimSupport, "Claim support", "higher", shareUnit, "The answer is split into sentences; each sentence with citations is judged against the passage of each page it cites (the text the run read of it). Share of cited sentences that a cited page supports."},
		{MetricContradicted, "Contradicted", "lower", shareUnit, "Share of cited sentences that a cited page contradicts and none supports."},
		{MetricCitationPrecision, "Citation precision", "higher", shareUnit, "Share of (sentence, cited page) pairs judged supported, among the pairs whose page could be read."},
		{MetricUncited, "Uncited sentences", "lower", shareUnit, "Share of the answer's sentences (of three words or more) that cite nothing."},
		{MetricNotGathered, "Cited, not gathered", "lower", count, "Citation links whose URL is not a source the run gathered. Must be 0: the citation pipeline drops such links."},
		{MetricUnreadable, "Cited pages unreadable", "lower", count, "Cited pages with no text to judge: not recorded during the run and not readable afterwards."},
		{MetricSourceRecall, "Source recall", "higher", shareUnit, "Share of the question's expected sources among the pages the run gathered (searched or read). Only questions with expected sources."},
		{MetricCitedRecall, "Cited source recall", "higher", shareUnit, "Share of the question's expected sources that the answer cites."},
		{MetricJudgeAgreement, "Judge agreement", "higher", shareUnit, "Mean share of the judge passes that agree with the majority label, over the case's judgements (1 with one pass)."},
		{MetricFailed, "Failed runs", "lower", shareUnit, "1 when the run failed or returned no report, else 0."},
		{MetricCost, "Cost (USD)", "lower", usdUnit, "What the run's model calls cost at the configuration's prices; missing when a price is unknown."},
		{MetricTokens, "Tokens", "lower", "tokens", "Tokens of the run's model calls, every role (total as reported, else prompt + completion)."},
		{MetricPromptTokens, "Prompt tokens", "lower", "tokens", "Prompt tokens, cached ones included."},
		{MetricCompletionTokens, "Completion tokens", "lower", "tokens", "Completion tokens, reasoning included."},
		{MetricCachedTokens, "Cached tokens", "", "tokens", "Prompt tokens read from the provider's cache."},
		{MetricReasoningTokens, "Reasoning tokens", "", "tokens", "Completion tokens spent on reasoning."},
		{MetricCalls, "LLM calls", "lower", count, "Model calls of the run, failed ones included."},
		{MetricSeconds, "Wall time (s)", "lower", "seconds", "The run's wall-clock time."},
		{MetricStatements, "Statements", "", count, "Sentences of the answer judged or counted."},
		{MetricJudgeCost, "Judge cost (USD)", "", usdUnit, "What judging the case cost; missing when the judge's price is unknown."},
		{MetricJudgeTokens, "Judge tokens", "", "tokens", "Tokens of the judge's calls for the case."},
	}
}

// Score scores a case whose run is done (c.Outcome, or c.Error): the
// built-in scores, then opts.Scorers. It sets c's scores, Measures, Judge
// and ScoreError; the error is the first judge or scorer failure (also in
// ScoreError).
func Score(ctx context.Context, q Question, c *Case, opts Options) error {
	if opts.Judge == nil || opts.Judge.Model == nil {
		return ErrNoJudge
	}
	c.Judge, c.JudgePasses = opts.Judge.Name, opts.Judge.passes()
	c.Integrity, c.Claims, c.Correctness, c.Recall, c.Measures, c.ScoreError = Integrity{}, nil, nil, nil, nil, ""
	c.JudgeUsage, c.JudgeCostUSD = llm.Tally{}, nil
	if c.Error != "" || c.Outcome == nil || c.Outcome.Report == nil {
		c.Measures = []Measure{{MetricFailed, 1}}
		return nil
	}
	meter := &llm.Meter{}
	j := *opts.Judge
	j.Model = llm.Metered(opts.Judge.Model, meter, "judge")
	s := &scoring{q: q, c: c, judge: &j, reader: opts.Reader}
	err := s.run(ctx)
	c.JudgeUsage = meter.Total()
	if opts.JudgePrice != nil {
		usd := opts.JudgePrice.Cost(c.JudgeUsage.Usage)
		c.JudgeCostUSD = &usd
	}
	c.Measures = s.measures()
	if err != nil {
		c.ScoreError = err.Error()
		return err
	}
	return scoreCustom(ctx, q, c, opts.Scorers)
}

// scoreCustom runs the custom scorers, replacing their earlier measures.
func scoreCustom(ctx context.Context, q Question, c *Case, scorers []Scorer) error {
	for _, sc := range scorers {
		names := map[string]bool{}
		for _, m := range sc.Metrics() {
			names[m.Name] = true
		}
		c.Measures = slices.DeleteFunc(c.Measures, func(m Measure) bool { return names[m.Name] })
		ms, err := sc.Score(ctx, q, c)
		if err != nil {
			c.ScoreError = fmt.Sprintf("scorer %s: %v", strings.Join(mapKeys(names), ","), err)
			return errors.New(c.ScoreError)
		}
		for _, m := range ms {
			if !names[m.Name] {
				return fmt.Errorf("eval: a scorer measured %q, which its Metrics do not name", m.Name)
			}
		}
		c.Measures = append(c.Measures, ms...)
	}
	return nil
}

func mapKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// scoring is one case being scored.
type scoring struct {
	q      Question
	c      *Case
	judge  *Judge
	reader research.PageReader
	texts  map[string]string // by source key
}

// judgeConcurrency bounds a case's judge calls in flight.
const judgeConcurrency = 4

func (s *scoring) run(ctx context.Context) error {
	out := s.c.Outcome
	rep := out.Report
	sources := map[string]citation.Source{}
	for _, src := range rep.Sources {
		sources[sourceKey(src.URL)] = src
	}
	number := map[int]citation.Source{}
	for i, src := range rep.Sources {
		number[i+1] = src
	}
	s.texts = map[string]string{}
	for k, v := range out.Texts {
		s.texts[sourceKey(k)] = v // keys as Recorder writes them, or plain URLs
	}
	// Integrity and the pages to judge against.
	st := Statements(rep.Answer)
	claims := &Claims{}
	unreadable := map[string]bool{}
	for _, m := range citationLink().FindAllStringSubmatch(rep.Answer, -1) {
		s.c.Integrity.Citations++
		if _, ok := sources[sourceKey(m[2])]; !ok && !slices.Contains(s.c.Integrity.NotGathered, m[2]) {
			s.c.Integrity.NotGathered = append(s.c.Integrity.NotGathered, m[2])
		}
	}
	for _, src := range rep.Sources {
		k := sourceKey(src.URL)
		if s.texts[k] != "" {
			continue
		}
		if text := s.read(ctx, src.URL); text != "" {
			s.texts[k] = text
		} else {
			unreadable[src.URL] = true
		}
	}
	for u := range unreadable {
		s.c.Integrity.Unreadable = append(s.c.Integrity.Unreadable, u)
	}
	slices.Sort(s.c.Integrity.Unreadable)
	if s.c.Integrity.NotGathered == nil {
		s.c.Integrity.NotGathered = []string{}
	}
	if s.c.Integrity.Unreadable == nil {
		s.c.Integrity.Unreadable = []string{}
	}

	// Claim support.
	type pair struct{ st, j int }
	var pairs []pair
	for i, stmt := range st {
		js := JudgedStatement{Statement: stmt}
		for n, u := range stmt.URLs {
			jd := Judgement{Source: stmt.Cites[n], URL: u}
			text := s.texts[sourceKey(u)]
			if text == "" {
				jd.Label = Unreadable
			} else {
				jd.Passage = Passage(text, stmt.Text, maxPassage)
				pairs = append(pairs, pair{i, len(js.Judgments)})
			}
			js.Judgments = append(js.Judgments, jd)
		}
		claims.Statements = append(claims.Statements, js)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		sem      = make(chan struct{}, judgeConcurrency)
	)
	for _, p := range pairs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			jd := &claims.Statements[p.st].Judgments[p.j]
			label, agree, reasons, err := s.judge.judgeClaim(ctx, claims.Statements[p.st].Text, jd.Passage)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			jd.Label, jd.Agreement, jd.Reasons = label, agree, reasons
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	var agreeSum float64
	for i := range claims.Statements {
		js := &claims.Statements[i]
		if len(js.Judgments) == 0 {
			claims.Uncited++
			continue
		}
		claims.Cited++
		labels := map[string]bool{}
		for _, jd := range js.Judgments {
			labels[jd.Label] = true
			if jd.Label != Unreadable {
				claims.Pairs++
				agreeSum += jd.Agreement
				if jd.Label == Supported {
					claims.PairsSupported++
				}
			}
		}
		switch {
		case labels[Supported]:
			js.Label = Supported
			claims.Supported++
		case labels[Contradicted]:
			js.Label = Contradicted
			claims.Contradicted++
		case labels[Unsupported]:
			js.Label = Unsupported
			claims.Unsupported++
		default:
			js.Label = Unreadable
			claims.Unreadable++
		}
	}
	if claims.Pairs > 0 {
		claims.Agreement = agreeSum / float64(claims.Pairs)
	}
	if claims.Statements == nil {
		claims.Statements = []JudgedStatement{}
	}
	s.c.Claims = claims

	// Correctness.
	if s.q.Answer != "" {
		corr := &Correctness{Verdict: Incorrect, Agreement: 1, Reasons: []string{"the run gave no answer"}}
		if strings.TrimSpace(rep.Answer) != "" {
			v, agree, reasons, err := s.judge.judgeCorrectness(ctx, s.q.Question, s.q.Answer, rep.Answer)
			if err != nil {
				return err
			}
			corr = &Correctness{Verdict: v, Agreement: agree, Reasons: reasons}
		}
		corr.Score = correctnessScore(corr.Verdict)
		s.c.Correctness = corr
	}

	// Source recall.
	if len(s.q.Sources) > 0 {
		gathered := map[string]bool{}
		for k := range out.Texts {
			gathered[sourceKey(k)] = true
		}
		cited := map[string]bool{}
		for k := range sources {
			gathered[k] = true
			cited[k] = true
		}
		rc := &Recall{Expected: s.q.Sources, Gathered: []string{}, Cited: []string{}}
		for _, want := range s.q.Sources {
			if found(want, gathered) {
				rc.Gathered = append(rc.Gathered, want)
			}
			if found(want, cited) {
				rc.Cited = append(rc.Cited, want)
			}
		}
		s.c.Recall = rc
	}
	return nil
}

// found reports whether an expected source — a URL, or a corpus file's
// path — is among the source keys have.
func found(want string, have map[string]bool) bool {
	if have[sourceKey(want)] {
		return true
	}
	if strings.Contains(want, "://") {
		return false
	}
	// A corpus path: matches the end of a file:// URL's path.
	rel := "/" + strings.TrimPrefix(path.Clean(filepath.ToSlash(want)), "/")
	for k := range have {
		u, err := url.Parse(k)
		if err == nil && u.Scheme == "file" && (u.Path == rel || strings.HasSuffix(u.Path, rel)) {
			return true
		}
	}
	return false
}

// read reads a cited page the run did not record, when a reader is set.
func (s *scoring) read(ctx context.Context, u string) string {
	if s.reader == nil {
		return ""
	}
	p, err := s.reader.Read(ctx, u)
	if err != nil || p == nil {
		return ""
	}
	return p.Content
}

// measures are the case's values of the built-in metrics.
func (s *scoring) measures() []Measure {
	c := s.c
	ms := []Measure{{MetricFailed, 0}}
	add := func(name string, v float64) { ms = append(ms, Measure{name, v}) }
	if cl := c.Claims; cl != nil {
		add(MetricStatements, float64(cl.Cited+cl.Uncited))
		if cl.Cited+cl.Uncited > 0 {
			add(MetricUncited, float64(cl.Uncited)/float64(cl.Cited+cl.Uncited))
		}
		if judged := cl.Supported + cl.Unsupported + cl.Contradicted; judged > 0 {
			add(MetricClaimSupport, float64(cl.Supported)/float64(judged))
			add(MetricContradicted, float64(cl.Contradicted)/float64(judged))
		}
		if cl.Pairs > 0 {
			add(MetricCitationPrecision, float64(cl.PairsSupported)/float64(cl.Pairs))
		}
	}
	add(MetricNotGathered, float64(len(c.Integrity.NotGathered)))
	add(MetricUnreadable, float64(len(c.Integrity.Unreadable)))
	if c.Correctness != nil {
		add(MetricCorrectness, c.Correctness.Score)
	}
	if r := c.Recall; r != nil && len(r.Expected) > 0 {
		add(MetricSourceRecall, float64(len(r.Gathered))/float64(len(r.Expected)))
		add(MetricCitedRecall, float64(len(r.Cited))/float64(len(r.Expected)))
	}
	var agree []float64
	if c.Claims != nil {
		for _, js := range c.Claims.Statements {
			for _, jd := range js.Judgments {
				if jd.Label != Unreadable && jd.Agreement > 0 {
					agree = append(agree, jd.Agreement)
				}
			}
		}
	}
	if c.Correctness != nil && len(c.Correctness.Reasons) > 0 && c.Correctness.Agreement > 0 {
		agree = append(agree, c.Correctness.Agreement)
	}
	if len(agree) > 0 {
		add(MetricJudgeAgreement, mean(agree))
	}
	if out := c.Outcome; out != nil && out.Report != nil {
		t := out.Report.Usage.Total()
		if out.CostUSD != nil {
			add(MetricCost, *out.CostUSD)
		}
		add(MetricTokens, float64(tokens(t.Usage)))
		add(MetricPromptTokens, float64(t.Usage.PromptTokens))
		add(MetricCompletionTokens, float64(t.Usage.CompletionTokens))
		add(MetricCachedTokens, float64(t.Usage.CachedTokens))
		add(MetricReasoningTokens, float64(t.Usage.ReasoningTokens))
		add(MetricCalls, float64(t.Calls))
		add(MetricSeconds, out.Report.Timings.Total.Seconds())
	}
	add(MetricJudgeTokens, float64(tokens(c.JudgeUsage.Usage)))
	if c.JudgeCostUSD != nil {
		add(MetricJudgeCost, *c.JudgeCostUSD)
	}
	return ms
}

// tokens is a usage's total, or prompt + completion when the provider
// reported no total.
func tokens(u llm.Usage) int {
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.PromptTokens + u.CompletionTokens
}
