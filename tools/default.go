package tools

// DefaultOptions choose and configure the tools of NewDefault. Each tool is
// switched on by its required setting; the zero value gives planning and
// terminate only.
type DefaultOptions struct {
	// WebSearch adds web_search when WebSearch.Searcher is set.
	WebSearch WebSearchOptions
	// FetchPage adds fetch_page when FetchPage.Reader is set.
	FetchPage FetchPageOptions
	// Editor adds str_replace_editor when Editor.Workspace is set.
	Editor EditorOptions
	// Exec adds python_execute and bash only when Exec.AllowExec is true.
	// Exec.Workspace defaults to Editor.Workspace.
	Exec ExecOptions
	// AskHuman adds ask_human when AskHuman.Asker is set.
	AskHuman AskHumanOptions
	// Planning configures the planning tool, which is always included (get
	// it back with Collection.Get(PlanningName) and a *Planning assertion).
	Planning PlanningOptions
}

// NewDefault builds the standard agent tool set, in this order: web_search,
// fetch_page, str_replace_editor, python_execute, bash, planning, ask_human,
// terminate — each only if configured (see DefaultOptions). Code execution
// is never included unless opts.Exec.AllowExec is true.
func NewDefault(opts DefaultOptions) (*Collection, error) {
	var ts []Tool
	if opts.WebSearch.Searcher != nil {
		t, err := NewWebSearch(opts.WebSearch)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	if opts.FetchPage.Reader != nil {
		t, err := NewFetchPage(opts.FetchPage)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	if opts.Editor.Workspace != "" {
		t, err := NewEditor(opts.Editor)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	if opts.Exec.AllowExec {
		if opts.Exec.Workspace == "" {
			opts.Exec.Workspace = opts.Editor.Workspace
		}
		py, err := NewPythonExecute(opts.Exec)
		if err != nil {
			return nil, err
		}
		sh, err := NewBash(opts.Exec)
		if err != nil {
			return nil, err
		}
		ts = append(ts, py, sh)
	}
	pl, err := NewPlanning(opts.Planning)
	if err != nil {
		return nil, err
	}
	ts = append(ts, pl)
	if opts.AskHuman.Asker != nil {
		t, err := NewAskHuman(opts.AskHuman)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	ts = append(ts, NewTerminate())
	return NewCollection(ts...)
}
