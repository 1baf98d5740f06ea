package tools

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewDefault(t *testing.T) {
	c, err := NewDefault(DefaultOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{PlanningName, TerminateName}, c.Names())

	ws := t.TempDir()
	c, err = NewDefault(DefaultOptions{
		WebSearch: WebSearchOptions{Searcher: &fakeSearcher{}},
		FetchPage: FetchPageOptions{Reader: &fakeReader{}},
		Editor:    EditorOptions{Workspace: ws},
		AskHuman:  AskHumanOptions{Asker: NewTerminalAsker(strings.NewReader(""), &strings.Builder{})},
	})
	require.NoError(t, err)
	assert.Equal(t, []string{WebSearchName, FetchPageName, EditorName, PlanningName, AskHumanName, TerminateName}, c.Names())
	tool, ok := c.Get(PlanningName)
	require.True(t, ok)
	_, ok = tool.(*Planning)
	assert.True(t, ok, "the planning tool is reachable for its typed accessors")

	_, err = NewDefault(DefaultOptions{Exec: ExecOptions{AllowExec: true}})
	assert.ErrorContains(t, err, "workspace directory is required", "exec tools need a workspace")
	_, err = NewDefault(DefaultOptions{Planning: PlanningOptions{State: &PlanningState{Active: "x"}}})
	assert.Error(t, err)
}
