package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/deepgraph/deepgraph/internal/atomicfile"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
)

// Outcome is what a configuration produced for a question.
type Outcome struct {
	// Report is the run's report: its answer with numbered citations, the
	// cited sources, usage per role, timings.
	Report *research.Report `json:"report"`
	// Models is the model spec per role, for the record.
	Models map[string]string `json:"models,omitempty"`
	// CostUSD is what the run's model calls cost; nil when a price is
	// unknown.
	CostUSD *float64 `json:"cost_usd"`
	// Texts is the text the run read of each source, by source key
	// (Recorder.Texts); nil when it was not recorded (then cited pages are
	// read with Options.Reader to be judged).
	Texts map[string]string `json:"texts,omitempty"`
	// RunID is the run's id in a run store, when it was kept in one.
	RunID string `json:"run_id,omitempty"`
}

// Runner researches a question for a configuration. It is called
// concurrently. A run that returns an error may still return the Outcome
// it got (an incomplete report).
type Runner interface {
	Run(ctx context.Context, t Task) (*Outcome, error)
}

// Task is one run to make: a question, for a configuration, the Repeat-th
// time (from 1). (Config, Question.ID, Repeat) names it: a Runner that
// keeps its runs (a run store) can find an interrupted one by it and
// resume it.
type Task struct {
	Config   string
	Question Question
	Repeat   int
}

// RunnerFunc is a function that is a Runner.
type RunnerFunc func(ctx context.Context, t Task) (*Outcome, error)

// Run implements Runner.
func (f RunnerFunc) Run(ctx context.Context, t Task) (*Outcome, error) { return f(ctx, t) }

// Configuration is one of the setups compared: a name and what runs a
// question with it.
type Configuration struct {
	// Name names it in every output ("gpt-4.1@high", "b.yaml"); unique.
	Name string
	// Description says what it is (models, effort, back end), for the
	// outputs.
	Description string
	Runner      Runner
}

// Case is one run of one question by one configuration, scored.
type Case struct {
	Config     string `json:"config"`
	QuestionID string `json:"question_id"`
	Question   string `json:"question"`
	// Repeat is the run's number among the question's repeats, from 1.
	Repeat  int      `json:"repeat"`
	Outcome *Outcome `json:"outcome,omitempty"`
	// Error is why the run failed (its Outcome may then be missing).
	Error string `json:"error,omitempty"`
	// Judge is the judge model's name and JudgePasses its passes, as
	// scored.
	Judge       string `json:"judge"`
	JudgePasses int    `json:"judge_passes"`
	// The scores; Claims, Correctness and Recall are missing when they do
	// not apply (no answer, no reference, no expected sources).
	Integrity   Integrity    `json:"integrity"`
	Claims      *Claims      `json:"claims,omitempty"`
	Correctness *Correctness `json:"correctness,omitempty"`
	Recall      *Recall      `json:"recall,omitempty"`
	// Measures are the case's values of every metric that applies,
	// built-in and custom (MetricInfo names them).
	Measures []Measure `json:"measures"`
	// JudgeUsage and JudgeCostUSD are what judging this case cost (nil:
	// unknown price).
	JudgeUsage   llm.Tally `json:"judge_usage"`
	JudgeCostUSD *float64  `json:"judge_cost_usd"`
	// ScoreError is why scoring failed (a judge call); the case is scored
	// again when the eval runs again.
	ScoreError string `json:"score_error,omitempty"`
}

// Value returns the case's value of metric name.
func (c *Case) Value(name string) (float64, bool) {
	for _, m := range c.Measures {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// Measure is a case's value of a metric.
type Measure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Scorer is a custom score: it measures a case whose run produced a
// report. Plug one in with Options.Scorers.
type Scorer interface {
	// Metrics describe what it measures: each metric's name, direction
	// and how it is computed.
	Metrics() []MetricInfo
	// Score returns the case's measures (names from Metrics).
	Score(ctx context.Context, q Question, c *Case) ([]Measure, error)
}

// Store keeps scored cases so that an interrupted eval continues where it
// stopped. DirStore is one.
type Store interface {
	// Load returns the case of (config, question, repeat), or false.
	Load(config, questionID string, repeat int) (*Case, bool, error)
	// Save keeps c, replacing an earlier one.
	Save(c *Case) error
}

// Options tune an eval.
type Options struct {
	// Judge labels statements and grades answers; required.
	Judge *Judge
	// JudgePrice prices the judge's calls; nil leaves their cost unknown.
	JudgePrice *llm.Price
	// Repeat is the number of runs per question and configuration
	// (default 1).
	Repeat int
	// Concurrency bounds the runs in flight across configurations
	// (default 4).
	Concurrency int
	// Store keeps the cases; nil keeps none (nothing is resumable).
	Store Store
	// Reader reads a cited page whose text the run did not record
	// (Outcome.Texts); nil leaves such pages unread (cited_unreadable).
	Reader research.PageReader
	// Scorers are custom scores, run after the built-in ones.
	Scorers []Scorer
	// Seed seeds the bootstrap (default 1): the same cases give the same
	// intervals.
	Seed uint64
	// Progress, when set, is told each case as it is finished (kept ones
	// included, with kept true). It is called from one goroutine at a time.
	Progress func(c *Case, kept bool)
	// Now is the clock of Results.Created (default time.Now).
	Now func() time.Time
}

// ErrNoJudge is returned when Options.Judge has no model.
var ErrNoJudge = errors.New("eval: no judge model: set Options.Judge (the CLI's --judge MODEL)")

// Run runs every question with every configuration Repeat times, at most
// Concurrency at once, scores each run and sums the scores up. Cases the
// Store has, scored by the same judge, are not run again; a case whose run
// failed or whose scoring failed is. When ctx ends, Run returns what was
// finished with ctx's error.
func Run(ctx context.Context, qs []Question, cfgs []Configuration, opts Options) (*Results, error) {
	if opts.Judge == nil || opts.Judge.Model == nil {
		return nil, ErrNoJudge
	}
	if len(cfgs) == 0 {
		return nil, errors.New("eval: no configuration to evaluate")
	}
	names := map[string]bool{}
	for _, c := range cfgs {
		if c.Name == "" || c.Runner == nil {
			return nil, fmt.Errorf("eval: configuration %q needs a name and a Runner", c.Name)
		}
		if names[c.Name] {
			return nil, fmt.Errorf("eval: two configurations are named %q: names must be unique", c.Name)
		}
		names[c.Name] = true
	}
	repeat := max(opts.Repeat, 1)
	type job struct {
		cfg    Configuration
		q      Question
		repeat int
	}
	var jobs []job
	for r := 1; r <= repeat; r++ {
		for _, q := range qs {
			for _, c := range cfgs {
				jobs = append(jobs, job{c, q, r})
			}
		}
	}
	var (
		mu       sync.Mutex
		cases    = make([]*Case, len(jobs))
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, orDefault(opts.Concurrency, 4))
	)
	progress := func(c *Case, kept bool) {
		if opts.Progress != nil {
			mu.Lock()
			defer mu.Unlock()
			opts.Progress(c, kept)
		}
	}
	for i, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, kept, err := runCase(ctx, j.cfg, j.q, j.repeat, opts)
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			if c == nil {
				return // interrupted
			}
			mu.Lock()
			cases[i] = c
			mu.Unlock()
			progress(c, kept)
		}()
	}
	wg.Wait()
	var done []*Case
	for _, c := range cases {
		if c != nil {
			done = append(done, c)
		}
	}
	res := Summarize(qs, cfgs, done, opts)
	if firstErr != nil {
		return res, firstErr
	}
	return res, ctx.Err()
}

// runCase runs and scores one case, or takes it from the store; nil when
// ctx ended first. The error is the store's.
func runCase(ctx context.Context, cfg Configuration, q Question, repeat int, opts Options) (*Case, bool, error) {
	var c *Case
	if opts.Store != nil {
		kept, ok, err := opts.Store.Load(cfg.Name, q.ID, repeat)
		if err != nil {
			return nil, false, err
		}
		if ok && kept.Question == q.Question && kept.Error == "" && kept.Outcome != nil && kept.Outcome.Report != nil {
			if kept.ScoreError == "" && kept.Judge == opts.Judge.Name && kept.JudgePasses == opts.Judge.passes() {
				if len(opts.Scorers) == 0 {
					return kept, true, nil
				}
				// Judged already: only the custom scores are measured again.
				if err := scoreCustom(ctx, q, kept, opts.Scorers); err != nil && ctx.Err() != nil {
					return nil, false, nil
				}
				return kept, true, nil
			}
			c = kept // run kept; score again
		}
	}
	if c == nil {
		c = &Case{Config: cfg.Name, QuestionID: q.ID, Question: q.Question, Repeat: repeat}
		out, err := cfg.Runner.Run(ctx, Task{Config: cfg.Name, Question: q, Repeat: repeat})
		if ctx.Err() != nil {
			return nil, false, nil
		}
		c.Outcome = out
		if err != nil {
			c.Error = err.Error()
		} else if out == nil || out.Report == nil {
			c.Error = "the run returned no report"
		}
	}
	if err := Score(ctx, q, c, opts); err != nil && ctx.Err() != nil {
		return nil, false, nil
	}
	if opts.Store != nil {
		if err := opts.Store.Save(c); err != nil {
			return nil, false, err
		}
	}
	return c, false, nil
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// DirStore keeps each case as a JSON file under dir/cases/CONFIG/, named
// after the question id and repeat (QUESTION-rN.json), written whole or
// not at all: an eval killed at any moment loses at most the runs in
// flight. The directory is the eval's record; copy it to keep it.
func DirStore(dir string) Store { return dirStore(dir) }

type dirStore string

func (d dirStore) path(config, questionID string, repeat int) string {
	return filepath.Join(string(d), "cases", fileName(config), fileName(questionID)+"-r"+strconv.Itoa(repeat)+".json")
}

// Load implements Store.
func (d dirStore) Load(config, questionID string, repeat int) (*Case, bool, error) {
	data, err := os.ReadFile(d.path(config, questionID, repeat))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("eval: reading a kept case: %w", err)
	}
	var c Case
	if json.Unmarshal(data, &c) != nil || c.Config != config || c.QuestionID != questionID || c.Repeat != repeat {
		return nil, false, nil // not ours, or damaged: run it again
	}
	return &c, true, nil
}

// Save implements Store.
func (d dirStore) Save(c *Case) error {
	p := d.path(c.Config, c.QuestionID, c.Repeat)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("eval: keeping a case: %w", err)
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("eval: encoding case %s/%s: %w", c.Config, c.QuestionID, err)
	}
	if err := atomicfile.Write(p, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("eval: keeping a case: %w", err)
	}
	return nil
}

// fileName makes a name safe as a file name: letters, digits, '.', '-'
// and '_' kept, anything else '_'; never empty, "." or "..".
func fileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := b.String()
	if len(out) > 100 {
		out = out[:100]
	}
	if strings.Trim(out, ".") == "" {
		out = "_" + out
	}
	if out != s { // two names must not share a file
		sum := sha256.Sum256([]byte(s))
		out += "-" + hex.EncodeToString(sum[:4])
	}
	return out
}
