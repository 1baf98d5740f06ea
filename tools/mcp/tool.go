package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

// tool is one tool of an MCP server, as a tools.Tool.
type tool struct {
	c      *Client
	name   string // "server.tool", sanitised
	remote string // the tool's name on the server
	desc   string
	params *jsonschema.Schema
	// readOnly: the server annotates the tool as not changing its
	// environment (readOnlyHint).
	readOnly bool
}

func (t *tool) Name() string                   { return t.name }
func (t *tool) Description() string            { return t.desc }
func (t *tool) Parameters() *jsonschema.Schema { return t.params }

// Run calls the tool on the server. See Client for what happens on a
// timeout, a cancellation and a server that stopped.
func (t *tool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	return t.c.call(ctx, t.name, t.remote, args)
}

// Effect implements tools.SideEffects: a tool the server does not
// annotate as read-only (readOnlyHint) may change something.
func (t *tool) Effect(json.RawMessage) tools.Effect { return tools.Effect{Effectful: !t.readOnly} }

// RemoteName returns the name of the tool on its server, which may differ
// from Name (the server's name is prefixed, and characters a model does not
// accept are replaced).
func RemoteName(t tools.Tool) (string, bool) {
	if mt, ok := t.(*tool); ok {
		return mt.remote, true
	}
	return "", false
}

// Tool names must match ^[A-Za-z_][A-Za-z0-9_.-]{0,63}$ (tools.CheckName).
const maxToolName = 64

var invalidNameChar = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_.-]`) })

// toolName is the tools.Tool name of the MCP tool remote of server:
// "server.remote", with characters outside [A-Za-z0-9_.-] replaced by '_',
// a leading '_' when the name does not start with a letter or '_', and,
// when too long, cut with a hash of the whole name appended so that
// different long names stay different.
func toolName(server, remote string) string {
	full := server + "." + remote
	name := invalidNameChar().ReplaceAllString(full, "_")
	if c := name[0]; !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
		name = "_" + name
	}
	if len(name) > maxToolName {
		sum := sha256.Sum256([]byte(full))
		suffix := "_" + hex.EncodeToString(sum[:4])
		name = name[:maxToolName-len(suffix)] + suffix
	}
	return name
}

// uniqueName returns name, or name with a "_2", "_3"… suffix (cut to fit)
// when taken already.
func uniqueName(name string, taken map[string]bool) string {
	if !taken[name] {
		return name
	}
	for i := 2; ; i++ {
		suffix := "_" + strconv.Itoa(i)
		base := name
		if len(base)+len(suffix) > maxToolName {
			base = base[:maxToolName-len(suffix)]
		}
		if cand := base + suffix; !taken[cand] {
			return cand
		}
	}
}

// permissive is the parameters schema of a tool whose own schema is unusable:
// any object; the server still checks the arguments.
func permissive() *jsonschema.Schema { return &jsonschema.Schema{Type: "object"} }

// inputSchema converts an MCP tool's input schema into a resolved-checked
// *jsonschema.Schema; a schema that does not convert or resolve is replaced
// by an object schema that accepts anything, and the reason returned.
func inputSchema(raw any) (*jsonschema.Schema, error) {
	if raw == nil {
		return permissive(), nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return permissive(), err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return permissive(), err
	}
	if _, err := s.Resolve(nil); err != nil {
		return permissive(), err
	}
	return &s, nil
}

// buildTools makes the tools.Tools of a server's listing, in its order.
func (c *Client) buildTools(listed []*sdk.Tool) []tools.Tool {
	taken := map[string]bool{}
	out := make([]tools.Tool, 0, len(listed))
	for _, mt := range listed {
		if mt == nil || mt.Name == "" {
			continue
		}
		name := uniqueName(toolName(c.srv.Name, mt.Name), taken)
		taken[name] = true
		if name != c.srv.Name+"."+mt.Name {
			c.log.Info("mcp: tool renamed to a name models accept", "server", c.srv.Name, "tool", mt.Name, "name", name)
		}
		params, err := inputSchema(mt.InputSchema)
		if err != nil {
			c.log.Warn("mcp: tool's input schema is unusable; it takes any object instead", "server", c.srv.Name, "tool", mt.Name, "error", err)
		}
		desc := strings.TrimSpace(mt.Description)
		if desc == "" {
			desc = strings.TrimSpace(mt.Title)
		}
		if desc == "" && mt.Annotations != nil {
			desc = strings.TrimSpace(mt.Annotations.Title)
		}
		if desc == "" {
			desc = fmt.Sprintf("The %s tool of the MCP server %s.", mt.Name, c.srv.Name)
		}
		readOnly := mt.Annotations != nil && mt.Annotations.ReadOnlyHint
		out = append(out, &tool{c: c, name: name, remote: mt.Name, desc: "[" + c.srv.Name + "] " + desc, params: params, readOnly: readOnly})
	}
	return out
}

// collection builds a tools.Collection of ts. A tool the collection
// refuses (which sanitised names and checked schemas should prevent) is
// left out and logged, so one bad tool does not cost the others.
func (c *Client) collection(ts []tools.Tool) *tools.Collection {
	coll, err := tools.NewCollection(ts...)
	if err == nil {
		return coll
	}
	var kept []tools.Tool
	for _, t := range ts {
		if _, err := tools.NewCollection(append(kept, t)...); err != nil {
			c.log.Warn("mcp: tool left out", "server", c.srv.Name, "tool", t.Name(), "error", err)
			continue
		}
		kept = append(kept, t)
	}
	coll, _ = tools.NewCollection(kept...)
	return coll
}

// toResult maps an MCP tool result to a tools.Result:
//   - text content: Output, the texts joined by newlines;
//   - images: Images (and an embedded image resource too);
//   - resource links and embedded resources: a line naming the URI (with
//     an embedded text resource's text below it); http(s) URIs are also
//     Sources;
//   - audio: a line saying it is not shown;
//   - structuredContent, when there is no text: its JSON;
//   - isError: Error holds the text ("the tool reported an error" if none).
func toResult(r *sdk.CallToolResult) tools.Result {
	var res tools.Result
	var lines []string
	hasText := false
	addSource := func(uri, title string) {
		if strings.HasPrefix(uri, "http://") || strings.HasPrefix(uri, "https://") {
			res.Sources = append(res.Sources, tools.Source{URL: uri, Title: title})
		}
	}
	for _, ct := range r.Content {
		switch v := ct.(type) {
		case *sdk.TextContent:
			lines = append(lines, v.Text)
			hasText = true
		case *sdk.ImageContent:
			res.Images = append(res.Images, schemas.Image{MIMEType: v.MIMEType, Data: v.Data})
		case *sdk.AudioContent:
			lines = append(lines, fmt.Sprintf("[audio %s, %d bytes: not shown]", orUnknown(v.MIMEType), len(v.Data)))
		case *sdk.ResourceLink:
			title := v.Title
			if title == "" {
				title = v.Name
			}
			line := "Resource link: " + v.URI
			if title != "" {
				line += " (" + title + ")"
			}
			if v.Description != "" {
				line += ": " + v.Description
			}
			lines = append(lines, line)
			addSource(v.URI, title)
		case *sdk.EmbeddedResource:
			rc := v.Resource
			if rc == nil {
				continue
			}
			switch {
			case rc.Text != "":
				lines = append(lines, "Resource "+rc.URI+":\n"+rc.Text)
				hasText = true
			case strings.HasPrefix(rc.MIMEType, "image/") && len(rc.Blob) > 0:
				res.Images = append(res.Images, schemas.Image{MIMEType: rc.MIMEType, Data: rc.Blob})
				lines = append(lines, "Resource "+rc.URI+" ("+rc.MIMEType+", attached)")
			default:
				lines = append(lines, fmt.Sprintf("Resource %s (%s, %d bytes: not shown)", rc.URI, orUnknown(rc.MIMEType), len(rc.Blob)))
			}
			addSource(rc.URI, "")
		default:
			if b, err := json.Marshal(ct); err == nil {
				lines = append(lines, string(b))
			}
		}
	}
	if !hasText && r.StructuredContent != nil {
		if b, err := json.MarshalIndent(r.StructuredContent, "", "  "); err == nil {
			lines = append(lines, string(b))
		}
	}
	text := strings.ToValidUTF8(strings.Join(lines, "\n"), "\uFFFD")
	if r.IsError {
		res.Error = text
		if strings.TrimSpace(res.Error) == "" {
			res.Error = "the tool reported an error without saying what"
		}
		return res
	}
	res.Output = text
	return res
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}
