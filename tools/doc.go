// Package tools is the tool system of deepgraph's agents: the Tool
// interface, a typed way to make tools from Go functions, the Collection an
// agent executes model tool calls through, and the built-in tools
// (web_search, fetch_page, str_replace_editor, python_execute, bash,
// ask_human, planning, terminate).
//
// # Tools and results
//
// A Tool has a name, a description and a JSON Schema of its arguments, and
// runs with the model's arguments as raw JSON:
//
//	Run(ctx context.Context, args json.RawMessage) (Result, error)
//
// The contract separates what the model should see from what the program
// should handle:
//
//   - Success: a Result with Output (and maybe Images). The model sees
//     Output, or "(no output)".
//   - A failure the model caused or can react to — bad arguments, a missing
//     file, an ambiguous edit, a command that exited non-zero, a page that
//     answered 404 or is refused by the SSRF guard: a Result with Error set
//     and a nil error. The model sees "Error: <Error>", followed by any
//     partial Output.
//   - An infrastructure failure — the run was cancelled, the search provider
//     is down, the interpreter cannot be started: a non-nil error. Through a
//     Collection the model sees "Error: <tool> failed: <error>" and the
//     agent receives the error, so it can stop (ctx done) or log and go on.
//
// Result.Content renders exactly what the model sees; Result.Message builds
// the tool message answering a call.
//
// # Func tools
//
// Func makes a Tool from a function taking a struct. The schema is inferred
// from the struct with github.com/google/jsonschema-go: json tags name the
// properties, omitempty/omitzero fields are optional and the rest required,
// `jsonschema:"…"` tags are descriptions, unknown properties are refused;
// an argument type implementing SchemaExtender adds enums and bounds.
// Arguments are validated against the schema and decoded strictly before
// the function runs; if they do not fit, the model gets the validation
// error and the function is not called. A null for an optional property
// counts as absent (models used to strict structured output send null for
// every argument they do not use).
//
// # Collections
//
// A Collection holds tools with unique names in a fixed order. Defs
// describes them to a model (the same order every time); Subset picks tools
// by name (the CLI's --tools) and names the available ones when a name is
// unknown. Execute runs a model's ToolCall and never crashes: an unknown
// tool, malformed JSON or schema-invalid arguments become a failed Result
// the model can correct, and a panicking tool becomes a failed Result plus
// a *PanicError for the logs. NewDefault builds the standard set from
// DefaultOptions.
//
// # Built-in tools
//
//   - web_search (NewWebSearch) over a search.Searcher: numbered results
//     with title, URL, date and snippet.
//   - fetch_page (NewFetchPage) over a PageReader such as *search.Reader:
//     the page's main content as Markdown, capped per call, with an offset
//     to read on.
//   - str_replace_editor (NewEditor): view (numbered lines, line ranges,
//     directory listings two levels deep, images), create, str_replace
//     (old_str must occur exactly once), insert and undo_edit, confined to
//     a workspace directory. It is one tool with a command parameter because
//     that is the shape models are trained on (Anthropic's text editor tool,
//     OpenManus) and the commands share the undo history.
//   - python_execute (NewPythonExecute) and bash (NewBash): off unless
//     enabled; see below. Each call is a fresh process (no persistent
//     session): state lives in files.
//   - ask_human (NewAskHuman) asks the user through an Asker: today
//     TerminalAsker on a terminal; with durable runs, an Asker that turns
//     the question into a graph interrupt.
//   - planning (NewPlanning): plans of steps with statuses (not_started,
//     in_progress, completed, blocked) and notes, shown with [ ] [→] [✓] [!]
//     marks; typed accessors (Plans, Active, CreatePlan, MarkStep, State)
//     let a planning flow drive it without parsing text.
//   - terminate (NewTerminate): the model ends the task with a status and
//     its final answer; the agent loop recognises it with IsTerminate and
//     reads it with ParseTerminate.
//
// # Side effects
//
// A tool whose calls may change something outside the run implements
// SideEffects, and EffectOf (or Collection.Effect) says what a call may
// do, asking the tool inside wrappers (Wrapper: WithTimeout, telemetry's
// traced tools): bash and python_execute always, the editor's writes (with
// a view of the file as their Check), MCP tools their server does not
// annotate read-only. An agent asks a person before such calls when told
// to, and never repeats them blindly after a crash (nodes.AgentConfig.
// ApproveTools, nodes.WithCallJournal); other calls are read-only and may
// be repeated.
//
// # Security posture
//
// Everything a tool receives from the model, and everything it returns
// from the web or the file system, is untrusted. Tools clean control
// characters from what they show, and agents must fence tool output in
// prompts as data, never as instructions.
//
// Every call a Collection runs is bounded in time (DefaultCallTimeout, or
// the tool's or the collection's own bound) and stops when its context is
// cancelled; a tool that ignores cancellation is abandoned after a few
// seconds. A workspace may not be a file-system root, a system directory
// or the home directory itself (CheckWorkspace). The editor refuses named
// pipes, devices and sockets before opening them.
//
// The editor resolves every path inside its workspace: "..", absolute paths
// elsewhere and symbolic links leading out (also for files that do not
// exist yet under a linked directory) are refused, first with a clear
// message and then, race-free, by an os.Root opened on the workspace. It
// neither reads nor changes a file with more than one hard link (another
// of its names may be outside the workspace). It never writes a file in
// place: a new file, made in the same directory with the old one's mode
// (and owner, where it may), is renamed over it — so a link or a named pipe
// swapped in after the checks is replaced, not written through, and a
// reader never sees half a file.
//
// fetch_page reads only what its PageReader admits; *search.Reader refuses
// private, loopback, link-local and cloud-metadata addresses on every
// request and redirect (search/netguard). The model is told a URL was
// refused, not how to lift the guard.
//
// python_execute and bash are NOT a security sandbox. They are off unless
// ExecOptions.AllowExec is true, and then they run the model's code as the
// user running this program, with that user's file-system and network
// access. What they do bound: each command runs in the workspace directory
// (also its HOME) in its own process group; the environment is rebuilt from
// scratch (PATH, HOME, LANG, TMPDIR and a few harmless settings, plus
// ExecOptions.Env), so API keys in the parent's environment are not passed
// on; output is capped; and on timeout, cancellation or return the whole
// process group is killed (SIGTERM, then SIGKILL), background children
// included.
//
// Nothing a call starts outlives it, whatever it does to leave the group
// (setsid, env -i, a double fork), by one of these mechanisms, chosen when
// the tool is made (see internal/procgroup; ExecContainment says which one
// this system gets, and the agent's command line prints it):
//
//   - Linux, where the system permits it: each call runs in a PID
//     namespace of its own — with a user namespace of its own when this
//     program is unprivileged. The command is the namespace's PID 1: when
//     it ends, the kernel kills every process of the namespace; and it gets
//     SIGKILL when this program ends, however it ends, SIGKILL included.
//     (PID 1 ignores a SIGTERM it has no handler for, so a timed-out
//     command may take the kill grace to end; set-user-ID programs such as
//     sudo gain no privileges in a user namespace.)
//   - Linux, where namespaces are refused (user namespaces switched off, a
//     container's seccomp profile): the process group; the command dies
//     with this program (Pdeathsig); this program becomes a child subreaper
//     (PR_SET_CHILD_SUBREAPER), so the processes a command orphans become
//     its children, and after each call it kills them with their
//     descendants, as well as the processes that carry the call's ExecIDVar
//     tag in their environment. What a call orphaned while it ran still
//     survives a SIGKILL of this program: nothing is left to kill it.
//   - Other Unix systems: the process group only; a process that leaves it
//     (setsid) may survive the call, which then returns and says so.
//
// For real isolation (file system, network) set ExecOptions.CommandPrefix
// to run every command inside a container or VM, e.g.
//
//	[]string{"docker", "run", "--rm", "--network=none", "-v", "{workspace}:/w", "-w", "/w",
//		"python:3.12", "timeout", "120"}
//
// # Example
//
//	c, err := tools.NewDefault(tools.DefaultOptions{
//		WebSearch: tools.WebSearchOptions{Searcher: searcher},
//		FetchPage: tools.FetchPageOptions{Reader: reader},
//		Editor:    tools.EditorOptions{Workspace: "./work"},
//	})
//	…
//	req.Tools = c.Defs()
//	for _, call := range reply.ToolCalls {
//		res, err := c.Execute(ctx, call)
//		if ctx.Err() != nil {
//			return ctx.Err()
//		}
//		if err != nil {
//			logger.Warn("tool failed", "tool", call.Name, "err", err)
//		}
//		messages = append(messages, res.Message(call))
//		if tools.IsTerminate(call) && !res.Failed() {
//			t, _ := tools.ParseTerminate(call)
//			return finish(t.Status, t.Answer)
//		}
//	}
package tools
