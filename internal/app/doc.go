// Package app builds the research command's parts from a config.Config:
// the models per role (llm/providers), the research back end (a local corpus,
// web search providers with a guarded page reader, or Gemini's Google Search
// grounding), the researcher, and the agent with its tools. It holds the
// wiring so that it can be tested without the command line; cmd/research
// adds flags, output and exit codes.
//
// Every failure to build is a setup error (ErrSetup): nothing was sent
// anywhere yet, and the user has to change the configuration. ErrNoModel
// marks the case where no model is configured at all.
//
//	cfg, err := config.Loader{DefaultModel: app.DefaultModel}.Load()
//	…
//	r, err := app.NewResearch(ctx, cfg, logger, nil) // or a store's Checkpointer
//	if err != nil { … }
//	defer r.Close()
//	report, err := r.Run(ctx, question)
//
// # Concurrency limits
//
// A limit exists to respect a provider's quota, never to pace a run. So:
//
//   - A run's own fan-out is bounded only by its shape: one research round
//     puts its queries' searches, summaries and page reads (queries ×
//     research.DefaultReadPages) in flight at once, and no default splits
//     that into waves.
//   - max_concurrency (model calls per model provider) and
//     search_concurrency (searches per search provider) are off by
//     default. Set, they bound the provider's requests of every run of the
//     process together — the runs share the provider's key and so its
//     quota: the models of one provider share one transport, and a Pool
//     shares models and back ends among runs.
//   - page_concurrency bounds the pages read at once by every run together
//     (pages come from many sites; the bound is for memory and CPU). Off by
//     default too.
//   - A limit that is set is never smaller than what one run at the
//     configured effort puts in flight in one step: it is raised to that,
//     so a small bound slows many runs down but never makes one run wait
//     on itself.
//
// Rate limits the bounds do not prevent are met by the transports'
// retries, which honour Retry-After.
package app
