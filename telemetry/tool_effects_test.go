package telemetry_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools"
)

// A traced tool has the side effects of the tool it traces.
func TestTracedToolKeepsItsEffects(t *testing.T) {
	sh, err := tools.NewBash(tools.ExecOptions{AllowExec: true, Workspace: t.TempDir()})
	require.NoError(t, err)
	tel := telemetry.New(nil, telemetry.Options{})
	assert.True(t, tools.EffectOf(tel.Tool(sh), nil).Effectful)
	assert.True(t, tools.EffectOf(tel.Tool(tools.WithTimeout(sh, 0)), nil).Effectful)
	assert.False(t, tools.EffectOf(tel.Tool(tools.NewTerminate()), nil).Effectful)
}
