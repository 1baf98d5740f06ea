package nodes

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/schemas"
)

// DefaultVerifyTurns is the default of AgentConfig.VerifyTurns.
const DefaultVerifyTurns = 2

// maxListing caps the entries of the workspace listing a verification turn
// shows.
const maxListing = 60

// anyFile stands for an artefact the task asks for without naming it ("create
// a file with …").
const anyFile = "*"

// fileExts are the extensions a word must end with to be taken for a file
// name: "notes.md" is a file, "golang.org" is not.
const fileExts = `md|markdown|txt|csv|tsv|json|jsonl|yaml|yml|toml|ini|xml|html|htm|css|js|ts|py|go|rs|java|c|h|cpp|rb|sh|sql|ipynb|tex|log|pdf|png|jpg|jpeg|svg|gif|docx|xlsx|pptx|zip`

var (
	// artefactVerb: the task asks for something to be made.
	artefactVerb = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(write|writes|writing|create|creates|save|saves|store|produce|generate|export|output|put|draft|make|build|dump|record|append)\b`)
	})
	fileName = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:^|[\s"'` + "`" + `(\[])((?:[\w.-]+/)*[\w-][\w.-]*\.(?:` + fileExts + `))\b`)
	})
	unnamedFile = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:a|an|the|new|one)\s+(?:\w+\s+){0,3}?(?:file|document|report file|spreadsheet)\b`)
	})
	// promise: a reply that says it wrote a file.
	promise = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:wrote|written|saved|created|stored|exported|generated|put)\b[^.\n]{0,60}?(?:^|[\s"'` + "`" + `(\[])((?:[\w.-]+/)*[\w-][\w.-]*\.(?:` + fileExts + `))\b`)
	})
)

// expectedFiles are the files text asks to be made: the file names it
// mentions when it asks for something to be written, created, saved…
// (["notes.md"] for "write notes.md"), or anyFile for a file it does not
// name; none when it asks for nothing to be made. URLs are not files.
func expectedFiles(text string) []string {
	if !artefactVerb().MatchString(text) {
		return nil
	}
	var out []string
	for _, m := range fileName().FindAllStringSubmatchIndex(text, -1) {
		name := text[m[2]:m[3]]
		if before := text[:m[2]]; strings.HasSuffix(before, "://") || strings.HasSuffix(before, "/") || strings.Contains(name, "//") {
			continue
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if len(out) == 0 && unnamedFile().MatchString(text) {
		out = append(out, anyFile)
	}
	return out
}

// promisedFiles are the files a reply says it wrote.
func promisedFiles(reply string) []string {
	var out []string
	for _, m := range promise().FindAllStringSubmatch(reply, -1) {
		if !strings.Contains(m[0], "://") && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// workspaceFile is an entry of the workspace listing.
type workspaceFile struct {
	name string // slash-separated, relative to the workspace
	size int64
}

// listWorkspace lists the files under dir (hidden ones and those of
// hidden directories left out), in path order.
func listWorkspace(dir string) ([]workspaceFile, error) {
	var out []workspaceFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable entry is left out
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		out = append(out, workspaceFile{name: filepath.ToSlash(rel), size: info.Size()})
		return nil
	})
	return out, err
}

// missingFiles are the expected files that are not in the listing, or are
// empty: a file counts when its path, or its base name anywhere in the
// workspace, matches. anyFile is never missing (the verification turn
// shows the listing for the model to confirm).
func missingFiles(expected []string, listing []workspaceFile) []string {
	var out []string
	for _, want := range expected {
		if want == anyFile {
			continue
		}
		clean := path.Clean(strings.TrimPrefix(filepath.ToSlash(want), "./"))
		found := slices.ContainsFunc(listing, func(f workspaceFile) bool {
			return f.size > 0 && (f.name == clean || path.Base(f.name) == path.Base(clean))
		})
		if !found {
			out = append(out, want)
		}
	}
	return out
}

// verifyPrompt is the verification turn's message: the workspace listing,
// what is missing, and the request to confirm or continue.
func verifyPrompt(expected, missing []string, listing []workspaceFile, listErr error) string {
	var b strings.Builder
	b.WriteString("Before this is marked done, check the files the task asks for. ")
	named := slices.DeleteFunc(slices.Clone(expected), func(s string) bool { return s == anyFile })
	if len(named) > 0 {
		fmt.Fprintf(&b, "Expected: %s. ", strings.Join(named, ", "))
	} else {
		b.WriteString("The task asks for a file. ")
	}
	switch {
	case listErr != nil:
		fmt.Fprintf(&b, "The workspace cannot be listed: %v.\n", listErr)
	case len(listing) == 0:
		b.WriteString("The workspace is empty.\n")
	default:
		b.WriteString("The workspace holds (name, size in bytes):\n")
		for i, f := range listing {
			if i == maxListing {
				fmt.Fprintf(&b, "… and %d more\n", len(listing)-maxListing)
				break
			}
			fmt.Fprintf(&b, "- %s (%d)\n", f.name, f.size)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "Missing or empty: %s. A reply in text does not create a file: write it with your tools, then give your final answer again.", strings.Join(missing, ", "))
	} else {
		b.WriteString("If the files are there and complete, give your final answer again; otherwise continue with your tools.")
	}
	return b.String()
}

// verifyState is what the verification rule decides when a run would end
// with a success in state s with answer.
type verifyVerdict int

const (
	verifyDone    verifyVerdict = iota // finish as the model said
	verifyTurn                         // show the listing and go on (Prompt)
	verifyMissing                      // out of turns with files missing: AgentMissingFiles
)

// verify applies "done means done" to a run about to end with a success:
// when the task (s.Expect) or the answer names files to be made and the
// agent has a Workspace, a missing file (or an unnamed one, once) gets a
// verification turn, at most VerifyTurns per run; out of turns with a
// named file still missing, the run ends with AgentMissingFiles.
func (a *Agent) verify(s AgentState, answer string) (verifyVerdict, string, []string) {
	if a.cfg.Workspace == "" || a.cfg.VerifyTurns < 0 {
		return verifyDone, "", nil
	}
	expected := slices.Clone(s.Expect)
	for _, f := range promisedFiles(answer) {
		if !slices.Contains(expected, f) {
			expected = append(expected, f)
		}
	}
	if len(expected) == 0 {
		return verifyDone, "", nil
	}
	listing, err := listWorkspace(a.cfg.Workspace)
	missing := missingFiles(expected, listing)
	unnamedOnce := len(missing) == 0 && slices.Contains(expected, anyFile) && s.Verifications == 0
	switch {
	case (len(missing) > 0 || unnamedOnce) && s.Verifications < a.cfg.VerifyTurns:
		return verifyTurn, verifyPrompt(expected, missing, listing, err), missing
	case len(missing) > 0:
		return verifyMissing, "", missing
	}
	return verifyDone, "", nil
}

// verifyPrefix starts every verification turn's message.
const verifyPrefix = "Before this is marked done, check the files"

// afterVerification reports whether the last message of msgs is a
// verification turn's: the reply to it may repeat the one before without
// being a repeat for the stuck rule.
func afterVerification(msgs []schemas.Message) bool {
	return len(msgs) > 0 && msgs[len(msgs)-1].Role == schemas.User && strings.HasPrefix(msgs[len(msgs)-1].Content, verifyPrefix)
}
