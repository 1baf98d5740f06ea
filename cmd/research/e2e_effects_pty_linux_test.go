package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --approve-tools on a terminal: each call with side effects is asked
// about as the run goes, an answer that cannot be read is asked again, and
// the run never stops for research resume.
func TestE2EAgentApproveToolsOnATerminal(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	bash := oaCall{Name: "bash", Args: `{"command":"echo one >> a.txt"}`}
	create := oaCall{Name: "str_replace_editor", Args: `{"command":"create","path":"b.txt","file_text":"b\n"}`}
	oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		if len(c.req.toolResults()) == 0 {
			return oaReply{ToolCalls: []oaCall{bash, create}}
		}
		return oaReply{ToolCalls: []oaCall{terminate("success", "Handled: "+strings.Join(c.req.toolResults(), " | "))}}
	})
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	master, slave := openPTY(t)
	p := startBinIn(t, slave, envv, "agent", "--model", "openai:gpt-4.1-mini", "--allow-exec", "--approve-tools", "--workspace", ws, "Prepare the notes")
	const prompt = "[approve a tool call]"
	p.waitCount(t, prompt, 1, 30*time.Second)
	assert.Contains(t, p.stderr.String(), `The agent wants to run bash {"command":"echo one >> a.txt"}. Allow it?`)
	_, err := master.WriteString("maybe\n")
	require.NoError(t, err)
	p.waitCount(t, prompt, 2, 30*time.Second)
	assert.Contains(t, p.stderr.String(), `Your answer could not be read: "maybe" is not a decision`)
	_, err = master.WriteString("yes\n")
	require.NoError(t, err)
	p.waitCount(t, prompt, 3, 30*time.Second)
	assert.Contains(t, p.stderr.String(), `The agent wants to run str_replace_editor`)
	_, err = master.WriteString("no: not b\n")
	require.NoError(t, err)

	res := p.wait(t, 60*time.Second)
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, "rejected it: not b")
	assert.NotContains(t, res.stderr, "Paused:")
	data, err := os.ReadFile(filepath.Join(ws, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\n", string(data))
	assert.NoFileExists(t, filepath.Join(ws, "b.txt"))
	assert.Len(t, oa.all(), 2, "the think step was not repeated by the approvals")
}
