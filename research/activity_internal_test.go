package research

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
)

func TestWarningTextCountsRight(t *testing.T) {
	for _, c := range []struct {
		kind WarningKind
		n    int
		want string
	}{
		{WarningPagesRefused, 1, "1 page was refused by the network guard"},
		{WarningPagesRefused, 2, "2 pages were refused by the network guard"},
		{WarningPagesUnreadable, 1, "1 page could not be read;"},
		{WarningPagesUnreadable, 3, "3 pages could not be read;"},
		{WarningNoResults, 2, "2 searches found no results"},
		{WarningFilesSkipped, 1, "1 file of the corpus was not indexed"},
	} {
		assert.Contains(t, warningText(c.kind, c.n), c.want)
	}
}

// A stream that broke off and is sent again (llm.Token.Restart) reaches
// observers as a restart activity, so that they drop what they showed of
// the cut text.
func TestARestartedStreamReachesObservers(t *testing.T) {
	a, ok := Describe(graph.Event[State]{Kind: graph.EventCustom, Node: NodeFinalizeAnswer, Step: 4, Value: llm.Token{Restart: true}})
	if assert.True(t, ok, "a restart is an activity") {
		assert.Equal(t, Activity{Kind: ActivityToken, Node: NodeFinalizeAnswer, Step: 4, Restart: true}, a)
	}
	a, ok = Describe(graph.Event[State]{Kind: graph.EventCustom, Node: NodeFinalizeAnswer, Step: 4, Value: llm.Token{Content: "The"}})
	if assert.True(t, ok, "a token is an activity") {
		assert.Equal(t, Activity{Kind: ActivityToken, Node: NodeFinalizeAnswer, Step: 4, Token: "The"}, a)
	}
}
