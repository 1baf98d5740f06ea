package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// The text-mode ReAct protocol, for models without native tool calling:
//
//	Thought: what to do next
//	Action: tool_name
//	Action Input: {"json": "arguments"}
//
// The model stops there (the call has a stop sequence on "Observation:");
// the agent runs the tool and replies "Observation: …". "Final Answer: …"
// ends the run, as does the terminate tool.

func textProtocol(defs []schemas.ToolDef) string {
	var b strings.Builder
	b.WriteString("You cannot call tools natively. Use this exact text format instead.\n\n")
	b.WriteString("To use a tool:\nThought: your reasoning about what to do next\nAction: the tool's name\nAction Input: the tool's arguments as one JSON object\n\n")
	b.WriteString("Then stop and wait: the tool's result comes back as \"Observation: …\". Use one tool per reply.\n\n")
	b.WriteString("When you are done:\nThought: your reasoning\nFinal Answer: your final answer for the user\n\nTools:\n")
	for _, d := range defs {
		params := "{}"
		if d.Parameters != nil {
			if data, err := json.Marshal(d.Parameters); err == nil {
				params = string(data)
			}
		}
		fmt.Fprintf(&b, "- %s: %s\n  Arguments (JSON Schema): %s\n", d.Name, oneLine(d.Description), params)
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

type textStep struct {
	thought string
	calls   []schemas.ToolCall
	final   string
}

var (
	reAction      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?im)^[ \t]*\**Action\**[ \t]*:[ \t]*(.*)$`) })
	reActionInput = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?im)^[ \t]*\**Action[ \t]*Input\**[ \t]*:`) })
	reFinal       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?im)^[ \t]*\**Final[ \t]*Answer\**[ \t]*:`) })
	reThought     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?im)^[ \t]*\**Thought\**[ \t]*:`) })
	reObservation = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?im)^[ \t]*Observation[ \t]*:`) })
)

// parseTextStep reads one reply of the text protocol. A reply with neither
// an action nor a final answer is a final answer as a whole (a plain reply);
// an action whose input is not a JSON object is an error the model is shown.
func parseTextStep(reply string, step int) (textStep, error) {
	reply = llmStripThink(reply)
	if loc := reObservation().FindStringIndex(reply); loc != nil {
		reply = reply[:loc[0]] // the model ran on and invented an observation
	}
	var st textStep
	thoughtEnd := len(reply)
	for _, re := range []*regexp.Regexp{reAction(), reFinal()} {
		if loc := re.FindStringIndex(reply); loc != nil && loc[0] < thoughtEnd {
			thoughtEnd = loc[0]
		}
	}
	st.thought = strings.TrimSpace(reply[:thoughtEnd])
	if loc := reThought().FindStringIndex(st.thought); loc != nil {
		st.thought = strings.TrimSpace(st.thought[loc[1]:])
	}

	if m := reAction().FindStringSubmatchIndex(reply); m != nil && !strings.EqualFold(strings.TrimSpace(reply[m[2]:m[3]]), "") {
		name := strings.Trim(strings.TrimSpace(reply[m[2]:m[3]]), "`*\"'")
		rest := reply[m[1]:]
		in := reActionInput().FindStringIndex(rest)
		if in == nil {
			return st, fmt.Errorf("the reply names Action %q but has no \"Action Input:\" line; give the arguments as a JSON object", name)
		}
		raw := strings.TrimSpace(rest[in[1]:])
		args := []byte("{}")
		if raw != "" && raw != "{}" {
			var err error
			if args, err = llm.ExtractJSON(raw); err != nil || !isJSONObject(args) {
				return st, fmt.Errorf("the Action Input of %q is not a JSON object: write the arguments as one JSON object", name)
			}
		}
		st.calls = []schemas.ToolCall{{ID: fmt.Sprintf("text_call_%d", step), Name: name, Arguments: args}}
		return st, nil
	}
	if loc := reFinal().FindStringIndex(reply); loc != nil {
		st.final = strings.TrimSpace(reply[loc[1]:])
		if st.final == "" {
			return st, errors.New("the Final Answer is empty")
		}
		return st, nil
	}
	st.thought = strings.TrimSpace(reply)
	return st, nil
}

func isJSONObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil
}

// llmStripThink drops a leading <think>…</think> block of reasoning models.
func llmStripThink(s string) string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "<think>") {
		if end := strings.Index(t, "</think>"); end >= 0 {
			return strings.TrimSpace(t[end+len("</think>"):])
		}
	}
	return s
}
