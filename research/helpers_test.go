package research_test

import (
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
)

func citationFor(q research.Query) citation.Source {
	return citation.ForResult("Page "+q.Text, "https://example.com/"+q.Text, q.ID, 0)
}
