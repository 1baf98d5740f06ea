package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/deepgraph/deepgraph/schemas"
)

// APIName reduces a tool or schema name to what provider APIs accept:
// letters, digits, '_' and '-', at most 64 characters. Other characters
// become '_'; an empty name becomes "response".
func APIName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= 64 {
			break
		}
		switch {
		case wireRune(r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "response"
	}
	return b.String()
}

// maxWireName is the longest tool name OpenAI and Anthropic accept.
const maxWireName = 64

func wireRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// ToolNames maps the tool names of one request to the names sent to a
// provider whose API accepts only ^[a-zA-Z0-9_-]{1,64}$ (OpenAI and the
// servers that speak its API, Anthropic), and back. Tool names may hold a
// '.' (MCP tools are named server.tool, see tools.CheckName); such a name
// travels as its wire name, with each '.' written "__":
//
//	files.read_file → files__read_file
//
// Any other character outside the wire set becomes '_', and a wire name
// that would exceed 64 characters is cut and ends in '_' and 8 hex digits
// of the name's SHA-256. Names the API accepts travel unchanged.
//
// A provider builds one ToolNames per request from the offered tools
// (NewToolNames), sends Wire(name) for the tool definitions, a forced tool
// choice and the tool calls and tool results in the history, and passes the
// tool-call names of the reply through Name. The zero value encodes (Wire)
// but knows no tools, so Name returns every name unchanged.
type ToolNames struct {
	wire map[string]string // tool name → wire name, offered tools only
	name map[string]string // wire name → tool name
}

// NewToolNames maps the names of the offered tools. Two tools whose names
// have the same wire name (files.read and files__read) cannot be told apart
// in a reply: that is an error naming both. Empty and repeated names are
// left for the caller to reject.
func NewToolNames(defs []schemas.ToolDef) (ToolNames, error) {
	var n ToolNames
	for _, d := range defs {
		w := wireName(d.Name)
		if other, ok := n.name[w]; ok && other != d.Name {
			return ToolNames{}, collision(other, d.Name, w)
		}
		if n.wire == nil {
			n.wire = make(map[string]string, len(defs))
			n.name = make(map[string]string, len(defs))
		}
		n.wire[d.Name] = w
		n.name[w] = d.Name
	}
	return n, nil
}

func collision(a, b, wire string) error {
	return fmt.Errorf("tools %q and %q would both be sent as %q (the provider accepts only letters, digits, '_' and '-' in tool names); rename one of them", a, b, wire)
}

// Wire returns the name to send for the tool named name: its mapped wire
// name when it is an offered tool, else the same encoding (for tool calls in
// the history to tools no longer offered).
func (n ToolNames) Wire(name string) string {
	if w, ok := n.wire[name]; ok {
		return w
	}
	return wireName(name)
}

// Name returns the tool name that wire stands for; a wire name that no
// offered tool has is returned unchanged.
func (n ToolNames) Name(wire string) string {
	if name, ok := n.name[wire]; ok {
		return name
	}
	return wire
}

// wireName encodes name as ToolNames describes. The empty name stays
// empty.
func wireName(name string) string {
	valid := len(name) <= maxWireName
	for _, r := range name {
		if !wireRune(r) {
			valid = false
			break
		}
	}
	if valid {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '.':
			b.WriteString("__")
		case wireRune(r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	w := b.String()
	if len(w) > maxWireName {
		sum := sha256.Sum256([]byte(name))
		w = w[:maxWireName-9] + "_" + hex.EncodeToString(sum[:4])
	}
	return w
}
