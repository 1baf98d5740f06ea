package nodes

import (
	"fmt"
	"strings"

	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/tools"
)

// maxPartialStepChars caps each finished step's result in a flow's
// partial summary.
const maxPartialStepChars = 4000

// flowPartialOf is what a flow that stopped before its summary (failed,
// timed out, interrupted) had done: the result of each finished step, the
// steps not done, and the sources gathered — with its citations checked
// like a summary's. "" when no step had finished. summary, when not "",
// is a best-effort summary written when the run ran out of time (its
// citations in labels, [S1]…), put first.
func flowPartialOf(s FlowState, summary string) (string, []citation.Source) {
	if len(s.Outcomes) == 0 {
		return "", nil
	}
	var b strings.Builder
	if summary = strings.TrimSpace(summary); summary != "" {
		summary = summary[:sourcesListStart(summary)] // one Sources list, at the end
		b.WriteString("The flow ran out of time before it finished; a summary of what it had done (incomplete):\n\n")
		b.WriteString(strings.TrimSpace(summary) + "\n\n")
	}
	b.WriteString("The flow stopped before its summary. What its finished steps found:\n")
	for _, o := range s.Outcomes {
		fmt.Fprintf(&b, "\n### Step %d (%s, %s): %s\n\n", o.Index+1, o.Executor, o.Status, oneLine(o.Step))
		text := o.text()
		text = text[:sourcesListStart(text)] // one Sources list, at the end
		b.WriteString(strings.TrimSpace(cutText(text, maxPartialStepChars)) + "\n")
	}
	var left []string
	for _, st := range s.Plan.Steps {
		if st.Status != tools.StepCompleted && st.Status != tools.StepBlocked {
			left = append(left, "- "+oneLine(st.Text))
		}
	}
	if len(left) > 0 {
		b.WriteString("\nNot done:\n" + strings.Join(left, "\n") + "\n")
	}
	text, cited, _ := citeAnswer(b.String(), s.Sources)
	return text, cited
}
