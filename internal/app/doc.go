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
package app
