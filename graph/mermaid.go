package graph

import (
	"fmt"
	"strings"
)

// Mermaid draws the graph as a Mermaid flowchart in the style of LangGraph's
// draw_mermaid: solid arrows for edges and waiting edges, dashed arrows for
// conditional edges, fan-outs and Command destinations, Start and End as
// stadiums and subgraphs as subroutine boxes. Paste it into any Markdown
// renderer that knows Mermaid.
func (c *Compiled[S]) Mermaid() string {
	g := c.g
	var b strings.Builder
	b.WriteString("---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n")
	ids := map[string]string{Start: Start, End: End}
	used := map[string]bool{Start: true, End: true}
	for _, name := range g.order {
		id := mermaidID(name)
		for base, i := id, 2; used[id]; i++ {
			id = fmt.Sprintf("%s_%d", base, i)
		}
		used[id] = true
		ids[name] = id
	}
	fmt.Fprintf(&b, "\t%s([<p>%s</p>]):::first\n", Start, Start)
	for _, name := range g.order {
		label := mermaidLabel(name)
		if g.nodes[name].sub {
			fmt.Fprintf(&b, "\t%s[[%s]]\n", ids[name], label)
		} else {
			fmt.Fprintf(&b, "\t%s(%s)\n", ids[name], label)
		}
	}
	fmt.Fprintf(&b, "\t%s([<p>%s</p>]):::last\n", End, End)

	seen := map[string]bool{}
	arrow := func(from, to string, dashed bool) {
		a := "-->"
		if dashed {
			a = "-.->"
		}
		line := fmt.Sprintf("\t%s %s %s;\n", ids[from], a, ids[to])
		if !seen[line] {
			seen[line] = true
			b.WriteString(line)
		}
	}
	for _, e := range g.edges {
		arrow(e.from, e.to, false)
	}
	for _, br := range g.branches {
		for _, d := range br.dests {
			arrow(br.from, d, true)
		}
	}
	for _, j := range g.joins {
		for _, f := range j.from {
			arrow(f, j.to, false)
		}
	}
	for _, name := range g.order {
		for _, d := range g.nodes[name].dests {
			arrow(name, d, true)
		}
	}
	b.WriteString("\tclassDef default fill:#f2f0ff,line-height:1.2\n")
	b.WriteString("\tclassDef first fill-opacity:0\n")
	b.WriteString("\tclassDef last fill:#bfb6fc\n")
	return b.String()
}

// mermaidID turns a node name into a Mermaid node id.
func mermaidID(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	id := b.String()
	switch id {
	case "end", "graph", "subgraph", "style", "class", "classDef", "click", "linkStyle":
		id += "_"
	}
	return id
}

// mermaidLabel quotes a node name when Mermaid needs it.
func mermaidLabel(name string) string {
	if mermaidID(name) == name {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, "#quot;") + `"`
}
