package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/npmtest"
)

// research mcp under the MCP Inspector's command line
// (@modelcontextprotocol/inspector-cli, installed with npm by npmtest):
// the Inspector starts the binary over stdio — with its own environment,
// which points at the fake OpenAI and SearXNG — lists the tools and calls
// web_search and deep_research, printing the JSON answers. The TypeScript
// SDK under it checks the structured content against the output schema.
// With $DEEPGRAPH_ARTIFACTS set, the answers are saved there as
// inspector-*.json.
func TestE2EMCPInspector(t *testing.T) {
	t.Parallel()
	bin := npmtest.Bin(t, npmtest.InspectorCLI, npmtest.InspectorCLIVersion, "mcp-inspector-cli")
	// The Inspector finds its package.json relative to the directory it
	// runs in: its build directory.
	dir := filepath.Join(npmtest.PackageDir(t, npmtest.InspectorCLI, npmtest.InspectorCLIVersion), "build")
	node := npmtest.Node(t)
	_, sx, _, vars := searchSetup(t)
	vars["DEEPGRAPH_MODEL"] = "openai:gpt-4.1-mini"
	envv := env(t, vars)

	inspect := func(name string, args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{bin, "--cli", binary, "mcp"}, args...)...)
		cmd.Dir = dir
		cmd.Env = envv
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		require.NoError(t, err, "mcp-inspector-cli %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout.String(), stderr.String())
		var out map[string]any
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "the Inspector's output is JSON:\n%s", stdout.String())
		if art := os.Getenv("DEEPGRAPH_ARTIFACTS"); art != "" {
			require.NoError(t, os.MkdirAll(art, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(art, "inspector-"+name+".json"), stdout.Bytes(), 0o644))
		}
		return out
	}

	list := inspect("tools-list", "--method", "tools/list")
	var names []string
	for _, tl := range list["tools"].([]any) {
		tool := tl.(map[string]any)
		names = append(names, tool["name"].(string))
		assert.NotEmpty(t, tool["description"])
		assert.Equal(t, "object", tool["inputSchema"].(map[string]any)["type"])
	}
	assert.ElementsMatch(t, []string{"deep_research", "web_search", "fetch_page"}, names)

	search := inspect("web-search", "--method", "tools/call", "--tool-name", "web_search", "--tool-arg", "query=raft leader election", "max_results=2")
	assert.NotEqual(t, true, search["isError"])
	text := contentOf(t, search)
	assert.Contains(t, text, `2 results for "raft leader election" (searxng):`)
	assert.Contains(t, text, "- Page 1 about raft leader election\n  URL: http://127.0.0.1:")
	assert.NotContains(t, text, "Page 3 about")

	report := inspect("deep-research", "--method", "tools/call", "--tool-name", "deep_research",
		"--tool-arg", "question=How does Raft elect a leader?", "effort=low")
	assert.NotEqual(t, true, report["isError"])
	md := contentOf(t, report)
	assert.Contains(t, md, "Raft elects a leader by randomized timeouts")
	assertCitations(t, md, sx.returned())
	structured, ok := report["structuredContent"].(map[string]any)
	require.True(t, ok, "structured content: %v", report)
	assert.Equal(t, "How does Raft elect a leader?", structured["question"])
	assert.NotEmpty(t, structured["sources"])
	assert.Equal(t, false, structured["incomplete"])
}

// contentOf is the text of a tools/call answer as the Inspector prints it.
func contentOf(t *testing.T, res map[string]any) string {
	t.Helper()
	var parts []string
	content, ok := res["content"].([]any)
	require.True(t, ok, "no content: %v", res)
	for _, c := range content {
		m := c.(map[string]any)
		require.Equal(t, "text", m["type"])
		parts = append(parts, m["text"].(string))
	}
	return strings.Join(parts, "\n")
}
