package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/eval"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/atomicfile"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
)

// evalFlags are research eval's own flags.
type evalFlags struct {
	configs, models, efforts []string
	judge                    string
	judgePasses, repeat      int
	out                      string
	concurrency              int
}

func (c *cli) evalCmd() *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval QUESTIONS --out DIR [--config A.yaml --config B.yaml | --model M --effort E ...] [--judge MODEL]",
		Short: "Measure answer correctness, citation support and cost on a question set, configurations side by side",
		Long: `eval researches every question of QUESTIONS with each configuration, --repeat
times, and scores each run:

  - citation integrity: cited URLs not gathered (must be 0), cited pages
    whose text could not be had;
  - claim support: the answer is split into sentences; each cited sentence
    is judged against the passage of each page it cites — the text the run
    read of it — as supported, unsupported or contradicted; citation
    precision; the share of sentences without a citation;
  - correctness against the question's reference answer, when it has one;
  - source recall against its expected sources, when it has some;
  - cost, tokens by role (cached included), model calls, wall time.

Means over the questions come with bootstrap 95 % intervals, and with the
lowest and highest mean of one repeat. The judge (--judge, default the
first configuration's answer model) is named in every output;
--judge-passes K judges each item K times and reports the agreement.

QUESTIONS is JSONL (.jsonl) or CSV/TSV (.csv, .tsv) with id, question,
optional answer (the reference) and sources (URLs or corpus paths); the
column names of FRAMES (Prompt, Answer, wiki_links) and DeepResearch
Bench (id, prompt, article) are read as they are.

Configurations: each --config FILE is one; each --model (and each
--effort) makes one per value, crossed with the config files. Other flags
(--corpus, --queries, --store …) apply to all. --corpus DIR runs against
a local corpus: an eval that is reproducible offline.

DIR gets summary.md, results.json, index.html (open it in a browser) and
cases/, one file per scored run. Running the same command again continues:
finished runs are kept, runs that failed are made again, runs interrupted
mid-way resume from their checkpoints in the run store (unless
--no-save). "research eval compare OLD NEW" shows what changed.

Exit status: 0 every run done, 1 some failed, 2 usage error, 130
interrupted (run the command again to go on).`,
		Example: `  research eval questions.jsonl --corpus ./docs --model openai:gpt-4.1-mini --model openai:gpt-4.1 --judge anthropic:claude-sonnet-4-5 --out eval/
  research eval frames.tsv --config fast.yaml --config deep.yaml --repeat 3 --judge-passes 3 --out frames-eval/
  research eval compare eval-before/ eval-after/`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("research eval takes one file of questions (JSONL, CSV or TSV); got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return c.runEval(cmd, args[0], f) },
	}
	fs := cmd.Flags()
	// These three shadow the global flags of the same names: here each may
	// be given several times, one configuration per value.
	fs.StringArrayVar(&f.configs, "config", nil, "a configuration's config file; repeat to compare several")
	fs.StringArrayVarP(&f.models, "model", "m", nil, "a configuration's model (provider:model); repeat to compare several")
	fs.StringArrayVar(&f.efforts, "effort", nil, "a configuration's effort (low, medium, high); repeat to compare several")
	fs.StringVar(&f.judge, "judge", "", "the judge model (provider:model); default: the first configuration's answer model")
	fs.IntVar(&f.judgePasses, "judge-passes", 1, "times each statement and answer is judged (majority label, agreement reported)")
	fs.IntVar(&f.repeat, "repeat", 1, "runs per question and configuration")
	fs.StringVarP(&f.out, "out", "o", "", "directory of the results (required; created if missing)")
	fs.IntVar(&f.concurrency, "concurrency", 4, "most runs in flight at once, across configurations")
	cmd.AddCommand(c.evalCompareCmd())
	return cmd
}

func (c *cli) evalCompareCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compare OLD NEW",
		Short: "Show what changed between two evals, with intervals",
		Long: `compare reads two evals' results.json (or their directories) and shows, per
configuration of the same name (or the only one of each), every metric old
and new with its interval, and the change over the questions both answered
with its paired bootstrap 95 % interval: better or worse when it excludes
0, else no clear change.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErr("research eval compare takes two results: OLD and NEW (results.json files or eval directories); got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			old, err := eval.ReadResults(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			cur, err := eval.ReadResults(args[1])
			if err != nil {
				return usageErr("%v", err)
			}
			cmp, err := eval.Compare(old, cur)
			if err != nil {
				return usageErr("%v: name the configurations alike in both evals", err)
			}
			_, err = fmt.Fprint(c.stdout, cmp.Markdown())
			return err
		},
	}
}

// evalConfig is one configuration of an eval, loaded.
type evalConfig struct {
	name, desc string
	cfg        *config.Config
}

func (c *cli) runEval(cmd *cobra.Command, file string, f evalFlags) error {
	if f.out == "" {
		return usageErr("research eval needs --out DIR, the directory of the results")
	}
	if f.repeat < 1 || f.repeat > 100 {
		return usageErr("--repeat %d: use a whole number from 1 to 100", f.repeat)
	}
	if f.judgePasses < 1 || f.judgePasses > 15 {
		return usageErr("--judge-passes %d: use a whole number from 1 to 15", f.judgePasses)
	}
	if f.concurrency < 1 || f.concurrency > 1000 {
		return usageErr("--concurrency %d: use a whole number from 1 to 1000", f.concurrency)
	}
	qf, err := os.Open(file)
	if err != nil {
		return usageErr("research eval %s: %v", file, errors.Unwrap(err))
	}
	qs, err := eval.ReadQuestions(qf, eval.FormatOf(file))
	_ = qf.Close()
	if err != nil {
		return usageErr("research eval %s: %v", file, err)
	}
	cfgs, err := c.evalConfigs(cmd, f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return usageErr("--out %s: %v", f.out, errors.Unwrap(err))
	}
	if err := checkDir("--out "+f.out, f.out, false); err != nil {
		return err
	}
	ctx := cmd.Context()
	logger := c.logger()
	base := cfgs[0].cfg
	judgeSpec := f.judge
	if judgeSpec == "" {
		judgeSpec = base.RoleModel(llm.RoleAnswer)
		c.console.line(fmt.Sprintf("judge: %s, the first configuration's answer model (set --judge to a model independent of those evaluated)", judgeSpec))
	}
	judgeModel, err := app.OpenModel(ctx, base, judgeSpec, logger)
	if err != nil {
		return fmt.Errorf("the judge %s: %w", judgeSpec, err)
	}
	judge := &eval.Judge{Model: judgeModel, Name: judgeSpec, Passes: f.judgePasses}
	var judgePrice *llm.Price
	if p, ok := base.Prices.For(judgeSpec); ok {
		judgePrice = &p
	}

	var st *app.Store
	if !c.noSave {
		if st, err = app.OpenStore(ctx, base); err != nil {
			return err
		}
		if st != nil {
			defer st.Close()
		}
	}
	pool := app.NewPool(logger)
	defer pool.Close()
	reader, err := app.PageReader(base, logger)
	if err != nil {
		return err
	}
	defer reader.Close()

	var confs []eval.Configuration
	for _, ec := range cfgs {
		c.console.addSecrets(ec.cfg)
		confs = append(confs, eval.Configuration{Name: ec.name, Description: ec.desc,
			Runner: &evalRunner{cfg: ec.cfg, pool: pool, store: st, dir: f.out, logger: logger}})
	}
	total := len(qs) * len(confs) * f.repeat
	c.console.setQuiet(c.quiet)
	c.console.line(fmt.Sprintf("Eval of %s × %s × %d from %s to %s, judge %s", plural(len(qs), "question", "questions"),
		plural(len(confs), "configuration", "configurations"), f.repeat, file, f.out, judgeSpec))
	c.console.start(fmt.Sprintf("0/%d runs", total))
	var n int
	res, runErr := eval.Run(ctx, qs, confs, eval.Options{
		Judge: judge, JudgePrice: judgePrice, Repeat: f.repeat, Concurrency: f.concurrency, Store: eval.DirStore(f.out),
		Reader: reader,
		Progress: func(cs *eval.Case, kept bool) {
			n++
			c.console.line(fmt.Sprintf("[%*d/%d] %s", len(strconv.Itoa(total)), n, total, c.console.redact(caseLine(cs, kept))))
			c.console.setStatus(fmt.Sprintf("%d/%d runs", n, total))
		},
	})
	c.console.stop()
	if res != nil {
		res.Set = filepath.Base(file)
		if err := eval.WriteFiles(f.out, res); err != nil {
			return err
		}
	}
	if runErr != nil {
		if context.Cause(ctx) == errInterrupted || errors.Is(runErr, context.Canceled) {
			c.console.errorLine(fmt.Sprintf("interrupted: %d of %d runs scored, in %s. Run the same command again to go on: finished runs are kept",
				len(res.Cases), total, f.out))
			return &exitError{code: exitInterrupted}
		}
		return runErr
	}
	failed := 0
	for _, s := range res.Configurations {
		failed += s.Failed
	}
	c.console.line(fmt.Sprintf("Eval finished: summary in %s, page %s", filepath.Join(f.out, eval.SummaryFile), filepath.Join(f.out, eval.PageFile)))
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed (see %s); run the same command again to retry them", failed, total, filepath.Join(f.out, eval.SummaryFile))
	}
	return nil
}

// caseLine is a finished case's progress line.
func caseLine(cs *eval.Case, kept bool) string {
	s := fmt.Sprintf("%s %s run %d", cs.Config, cs.QuestionID, cs.Repeat)
	if kept {
		s += " (kept)"
	}
	if cs.Error != "" {
		return s + ": failed: " + oneLine(cs.Error, 200)
	}
	if cs.Correctness != nil {
		s += " · " + cs.Correctness.Verdict
	}
	if cl := cs.Claims; cl != nil {
		s += fmt.Sprintf(" · %d/%d cited statements supported", cl.Supported, cl.Cited)
	}
	if cs.Outcome != nil && cs.Outcome.CostUSD != nil {
		s += " · " + llm.USD(*cs.Outcome.CostUSD)
	}
	if cs.ScoreError != "" {
		s += " · scoring failed: " + oneLine(cs.ScoreError, 200)
	}
	return s
}

// evalShadowed are eval's flags that take several values and stand for
// the global flags of the same names.
var evalShadowed = map[string]bool{"config": true, "model": true, "effort": true}

// evalConfigs loads a configuration per config file × model × effort.
func (c *cli) evalConfigs(cmd *cobra.Command, f evalFlags) ([]evalConfig, error) {
	files := f.configs
	if len(files) == 0 {
		files = []string{""}
	}
	models := f.models
	if len(models) == 0 {
		models = []string{""}
	}
	efforts := f.efforts
	if len(efforts) == 0 {
		efforts = []string{""}
	}
	var out []evalConfig
	seen := map[string]bool{}
	for _, file := range files {
		for _, model := range models {
			for _, effort := range efforts {
				fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
				cmd.Flags().VisitAll(func(fl *pflag.Flag) {
					if !evalShadowed[fl.Name] {
						fs.AddFlag(fl)
					}
				})
				var parts, desc []string
				if file != "" {
					parts = append(parts, strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
					desc = append(desc, "config "+file)
				}
				if model != "" {
					fs.String("model", "", "")
					_ = fs.Set("model", model)
					parts = append(parts, model)
				}
				if effort != "" {
					fs.String("effort", "", "")
					_ = fs.Set("effort", effort)
				}
				cfg, err := config.Loader{File: file, Flags: fs, DefaultModel: app.DefaultModel}.Load()
				if err != nil {
					return nil, err
				}
				c.console.addSecrets(cfg)
				name := strings.Join(parts, "/")
				if effort != "" {
					name += "@" + effort
				}
				if name == "" {
					name = cfg.RoleModel(llm.RoleAnswer)
				}
				if seen[name] {
					return nil, usageErr("the configuration %s is given twice", name)
				}
				seen[name] = true
				desc = append(desc, fmt.Sprintf("models %s (query), %s (research), %s (reflection), %s (answer); %d queries, %d loops",
					cfg.RoleModel(llm.RoleQuery), cfg.RoleModel(llm.RoleResearch), cfg.RoleModel(llm.RoleReflection), cfg.RoleModel(llm.RoleAnswer),
					cfg.InitialQueries, cfg.MaxLoops))
				if cfg.Corpus != "" {
					desc = append(desc, "corpus "+cfg.Corpus)
				}
				out = append(out, evalConfig{name: name, desc: strings.Join(desc, "; "), cfg: cfg})
			}
		}
	}
	return out, nil
}

// evalRunner runs an eval's questions for one configuration: each run is
// kept in the run store (research runs lists it, research show shows it),
// and a run interrupted mid-way is resumed from its checkpoints.
type evalRunner struct {
	cfg    *config.Config
	pool   *app.Pool
	store  *app.Store // nil: runs are not kept
	dir    string
	logger *slog.Logger
	mu     sync.Mutex
}

// runFile is where the id of a task's stored run is noted while it runs.
func (r *evalRunner) runFile(t eval.Task) string {
	return filepath.Join(r.dir, "runs", safeName(t.Config), safeName(t.Question.ID)+"-r"+strconv.Itoa(t.Repeat)+".id")
}

// Run implements eval.Runner.
func (r *evalRunner) Run(ctx context.Context, t eval.Task) (*eval.Outcome, error) {
	rec := eval.NewRecorder()
	var cp = checkpointer(r.store)
	res, err := r.pool.ResearchWrapped(ctx, r.cfg, cp, app.BackendWrap{Searcher: rec.Searcher, Reader: rec.Reader})
	if err != nil {
		return nil, err
	}
	defer res.Close()
	specs := res.Models.Specs()
	var (
		tr    *app.Tracker
		start func(context.Context) (*research.Report, error)
	)
	if r.store != nil {
		if prev := r.interrupted(ctx, t); prev != nil {
			if tr, err = r.store.Continue(ctx, prev, r.logger); err == nil {
				start = func(ctx context.Context) (*research.Report, error) {
					rep, err := res.Resume(ctx, prev.Thread, research.RunID(prev.ID))
					if rep == nil && err != nil && ctx.Err() == nil {
						// Killed before its first checkpoint: nothing to
						// resume from, so it starts over.
						r.logger.Debug("an interrupted eval run starts over", "run", prev.ID, "err", err)
						return res.Run(ctx, t.Question.Question, research.Thread(prev.Thread), research.RunID(prev.ID))
					}
					return rep, err
				}
			}
		}
		if start == nil {
			if tr, err = r.store.Begin(ctx, runstore.KindResearch, t.Question.Question, "", app.ResearchSettings(r.cfg, res, false), r.logger); err != nil {
				return nil, err
			}
			id := tr.Run.ID
			if err := os.MkdirAll(filepath.Dir(r.runFile(t)), 0o755); err != nil {
				return nil, err
			}
			if err := atomicfile.Write(r.runFile(t), []byte(id+"\n"), 0o644); err != nil {
				return nil, err
			}
			start = func(ctx context.Context) (*research.Report, error) {
				return res.Run(ctx, t.Question.Question, research.Thread(tr.Run.Thread), research.RunID(id))
			}
		}
	} else {
		start = func(ctx context.Context) (*research.Report, error) { return res.Run(ctx, t.Question.Question) }
	}
	runCtx := ctx
	if r.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, r.cfg.Timeout, errRunTimeout)
		defer cancel()
	}
	began := time.Now()
	rep, runErr := start(runCtx)
	out := &eval.Outcome{Texts: rec.Texts()}
	if rep != nil {
		if rep.Timings.Total == 0 {
			rep.Timings.Total = time.Since(began)
		}
		out.Report, out.Models, out.CostUSD = rep, specs, app.CostUSD(rep.Usage, specs, r.cfg.Prices)
	}
	if tr != nil {
		out.RunID = tr.Run.ID
		status, why := runstore.StatusDone, ""
		switch {
		case ctx.Err() != nil:
			status = runstore.StatusInterrupted
		case runErr != nil:
			status, why = runstore.StatusFailed, app.OneLine(runErr.Error(), 500)
		}
		var doc []byte
		if rep != nil {
			doc, _ = app.PricedResearchDocument(tr.Ref(), rep, specs, r.cfg.Prices, runErr)
			tr.Run.Cost = out.CostUSD
			tr.Run.Tokens, tr.Run.Calls = int64(app.Tokens(rep.Usage.Total().Usage)), rep.Usage.Total().Calls
		}
		if err := tr.Finish(ctx, status, why, doc); err != nil {
			r.logger.Warn("could not record the end of an eval run", "run", tr.Run.ID, "err", err)
		}
		if status != runstore.StatusInterrupted {
			_ = os.Remove(r.runFile(t))
		}
	}
	return out, runErr
}

// interrupted is the stored run of t that an earlier eval left
// interrupted, if any.
func (r *evalRunner) interrupted(ctx context.Context, t eval.Task) *runstore.Run {
	data, err := os.ReadFile(r.runFile(t))
	if err != nil {
		return nil
	}
	run, err := r.store.Runs.Get(ctx, strings.TrimSpace(string(data)))
	if err != nil || run.Question != t.Question.Question || run.Effective(time.Now(), runstore.Alive) != runstore.StatusInterrupted {
		return nil
	}
	return run
}

// safeName is a name fit for a file name.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if strings.Trim(b.String(), ".") == "" {
		return "_"
	}
	return b.String()
}
