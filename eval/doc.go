// Package eval measures deep research: whether the answers are right,
// whether the pages they cite say what they claim, and what they cost —
// configurations side by side, on a question set. The research eval
// command is a thin layer over it.
//
// # The model
//
// A question set ([Question], read by [ReadQuestions] from JSONL, CSV or
// TSV, FRAMES' and DeepResearch Bench's column names included) is run by
// each [Configuration]: a name and a [Runner] that researches a question
// and returns an [Outcome] — the research.Report, its cost, and the text
// the run read of each source, which a [Recorder] wrapped around the
// run's searcher and page reader collects. [Run] makes every (question,
// configuration, repeat) a [Case], at most Options.Concurrency at once,
// scores it ([Score]) and sums the cases up ([Summarize]) into [Results].
//
// Scoring a case:
//
//   - Integrity: citation links to pages not gathered (must be none) and
//     cited pages with no text to judge.
//   - Claims (FACT-style): the answer is split into [Statements]; each cited
//     statement is judged by the [Judge] model against the [Passage] of each
//     page it cites, as supported, unsupported or contradicted
//     ([ClaimRubric]); a page not read is never sent to the judge.
//   - Correctness: the answer graded against the reference answer
//     ([CorrectnessRubric]): 1, 0.5 or 0.
//   - Recall: the expected sources among those gathered and those cited.
//   - Cost, tokens by role (cached included), model calls, wall time; the
//     judge's own usage apart.
//
// Each item is judged Judge.Passes times: the majority's label counts and
// the agreement is reported. Every metric ([BuiltinMetrics], and those of
// custom [Scorer]s) is summed up per configuration as a mean over the
// questions with a bootstrap 95 % interval and the spread across repeats
// ([Aggregate]). [WriteFiles] writes results.json, summary.md and a
// self-contained HTML page; [Compare] says what changed between two evals,
// with paired intervals.
//
// A [Store] keeps each scored case ([DirStore]: a JSON file per case,
// written atomically), so that an eval run again continues where it
// stopped: finished cases are kept (judged again only when the judge
// changed), failed ones run again. The CLI also keeps each research run in
// the run store and resumes one interrupted mid-way from its checkpoints.
//
// # Example
//
//	runner := eval.RunnerFunc(func(ctx context.Context, t eval.Task) (*eval.Outcome, error) {
//		rec := eval.NewRecorder() // one per run: the text this run read
//		r, err := research.New(research.Config{QueryModel: model,
//			Backend: &research.SearchBackend{Searcher: rec.Searcher(corpus)}})
//		if err != nil {
//			return nil, err
//		}
//		rep, err := r.Run(ctx, t.Question.Question)
//		return &eval.Outcome{Report: rep, Texts: rec.Texts()}, err
//	})
//	res, err := eval.Run(ctx, questions, []eval.Configuration{{Name: "mine", Runner: runner}},
//		eval.Options{Judge: &eval.Judge{Model: judge, Name: "openai:gpt-4.1"}, Repeat: 3, Store: eval.DirStore("out")})
//	if err == nil {
//		err = eval.WriteFiles("out", res)
//	}
package eval
