package research

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
)

// The coalescer's rules, on a clock the test moves: a piece goes out at
// its size, after its window, at a change of node or step, before any
// other activity and at the end.
func TestCoalescerRules(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []Activity
	c := &coalescer{out: func(a Activity) { out = append(out, a) }, now: func() time.Time { return clock }}
	tok := func(node string, step int, s string) Activity {
		return Activity{Kind: ActivityToken, Node: node, Step: step, Token: s}
	}

	c.add(tok("a", 1, "x"))
	c.add(tok("a", 1, "y"))
	assert.Empty(t, out, "gathered")
	c.add(tok("b", 1, "z"))
	assert.Equal(t, []Activity{tok("a", 1, "xy")}, out, "another node")
	c.add(tok("b", 2, "w"))
	assert.Equal(t, tok("b", 1, "z"), out[1], "another step")
	c.add(Activity{Kind: ActivityAnswered, Node: "b", Step: 2})
	assert.Equal(t, []Activity{tok("b", 2, "w"), {Kind: ActivityAnswered, Node: "b", Step: 2}}, out[2:], "before another activity")

	out = nil
	c.add(tok("a", 3, "1"))
	clock = clock.Add(tokenWindow)
	c.add(tok("a", 3, "2"))
	assert.Equal(t, []Activity{tok("a", 3, "12")}, out, "after its window")

	out = nil
	c.add(tok("a", 3, strings.Repeat("x", tokenPieceBytes-1)))
	assert.Empty(t, out)
	c.add(tok("a", 3, "yz"))
	assert.Equal(t, []Activity{tok("a", 3, strings.Repeat("x", tokenPieceBytes-1)+"yz")}, out, "at its size")

	out = nil
	c.add(tok("a", 3, "end"))
	c.flush()
	c.flush()
	assert.Equal(t, []Activity{tok("a", 3, "end")}, out, "at the end, once")
	var none *coalescer
	none.flush() // no observer: nothing to do
}

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
// observers as a restart activity; the cut text still waiting in the
// coalescer is dropped rather than shown.
func TestARestartedStreamReachesObservers(t *testing.T) {
	a, ok := Describe(graph.Event[State]{Kind: graph.EventCustom, Node: NodeFinalizeAnswer, Step: 4, Value: llm.Token{Restart: true}})
	if assert.True(t, ok, "a restart is an activity") {
		assert.Equal(t, Activity{Kind: ActivityToken, Node: NodeFinalizeAnswer, Step: 4, Restart: true}, a)
	}

	var out []Activity
	c := &coalescer{out: func(a Activity) { out = append(out, a) }, now: time.Now}
	tok := Activity{Kind: ActivityToken, Node: "a", Step: 1, Token: "The ans"}
	c.add(tok)
	c.add(Activity{Kind: ActivityToken, Node: "a", Step: 1, Restart: true})
	c.add(Activity{Kind: ActivityToken, Node: "a", Step: 1, Token: "The answer."})
	c.flush()
	assert.Equal(t, []Activity{
		{Kind: ActivityToken, Node: "a", Step: 1, Restart: true},
		{Kind: ActivityToken, Node: "a", Step: 1, Token: "The answer."},
	}, out)
}
