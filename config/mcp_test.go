package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mcpYAML = `
mcp_servers:
  - name: files
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
    env: {GITHUB_TOKEN: "ghp-env-secret-1", MixedCase: "${DG_TEST_MCP_TOKEN}"}
  - name: search
    url: https://mcp.example.com/mcp?key=query-secret-2
    headers: {Authorization: "Bearer hdr-secret-3"}
    timeout: 2m
agent:
  max_steps: 5
`

func TestMCPServersFromFile(t *testing.T) {
	l := isolate(t)
	l.File = writeFile(t, "config.yaml", mcpYAML)
	c, err := l.Load()
	require.NoError(t, err)
	require.Len(t, c.MCPServers, 2)
	files, search := c.MCPServers[0], c.MCPServers[1]
	assert.Equal(t, "files", files.Name)
	assert.Equal(t, "npx", files.Command)
	assert.Equal(t, []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"}, files.Args)
	assert.Equal(t, map[string]Secret{"GITHUB_TOKEN": "ghp-env-secret-1", "MixedCase": "${DG_TEST_MCP_TOKEN}"}, files.Env, "variable names keep their case")
	assert.Equal(t, DefaultMCPTimeout, files.Timeout)
	assert.Equal(t, "https://mcp.example.com/mcp?key=query-secret-2", search.URL)
	assert.Equal(t, map[string]Secret{"Authorization": "Bearer hdr-secret-3"}, search.Headers)
	assert.Equal(t, 2*time.Minute, search.Timeout)
	assert.Equal(t, 5, c.Agent.MaxSteps, "the other keys still load")
	assert.Equal(t, "file "+l.File, c.Source("mcp_servers").String())

	// research config shows the servers, never a value of env or headers.
	t.Setenv("DG_TEST_MCP_TOKEN", "expanded-secret-4")
	var shown string
	for _, e := range c.Redacted() {
		if e.Key == "mcp_servers" {
			shown = e.Value
		}
	}
	assert.Equal(t, `files (stdio: npx -y @modelcontextprotocol/server-filesystem /home/me/notes; env GITHUB_TOKEN, MixedCase), `+
		`search (http: https://mcp.example.com/mcp?key=xxxxx; headers Authorization; timeout 2m)`, shown)
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("cfg", "servers", c.MCPServers, "server", files)
	for _, out := range []string{c.String(), fmt.Sprint(c.MCPServers), fmt.Sprintf("%+v %#v", files, search), logs.String(), mustJSON(t, c.MCPServers)} {
		for _, secret := range []string{"ghp-env-secret-1", "query-secret-2", "hdr-secret-3", "expanded-secret-4"} {
			assert.NotContains(t, out, secret)
		}
	}
	// The CLI masks them in anything it prints.
	assert.Subset(t, c.Secrets(), []string{"ghp-env-secret-1", "Bearer hdr-secret-3", "hdr-secret-3", "expanded-secret-4"})
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestMCPServersOtherFormats(t *testing.T) {
	for name, content := range map[string]string{
		"config.json": `{"mcp_servers": [{"name": "files", "command": "npx", "args": ["-y", "pkg"], "env": {"MyToken": "v"}, "timeout": 30}]}`,
		"config.toml": "[[mcp_servers]]\nname = \"files\"\ncommand = \"npx\"\nargs = [\"-y\", \"pkg\"]\ntimeout = \"30s\"\nenv = { MyToken = \"v\" }\n",
	} {
		l := isolate(t)
		l.File = writeFile(t, name, content)
		c, err := l.Load()
		require.NoError(t, err, name)
		require.Len(t, c.MCPServers, 1, name)
		assert.Equal(t, MCPServer{Name: "files", Command: "npx", Args: []string{"-y", "pkg"}, Env: map[string]Secret{"MyToken": "v"}, Timeout: 30 * time.Second}, c.MCPServers[0], name)
	}

	// A variable holds the list as JSON.
	l := isolate(t)
	t.Setenv("DEEPGRAPH_MCP_SERVERS", `[{"name":"web","url":"http://127.0.0.1:9000/mcp"}]`)
	c, err := l.Load()
	require.NoError(t, err)
	assert.Equal(t, []MCPServer{{Name: "web", URL: "http://127.0.0.1:9000/mcp", Timeout: DefaultMCPTimeout}}, c.MCPServers)
	assert.Equal(t, "env DEEPGRAPH_MCP_SERVERS", c.Source("mcp_servers").String())
	t.Setenv("DEEPGRAPH_MCP_SERVERS", `name: web`)
	_, err = l.Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `mcp_servers: "(the list)" is not allowed: use a JSON list of servers`)
}

// Every bad entry is named, with its field and what to write; all problems
// come at once; no secret appears.
func TestMCPServersErrors(t *testing.T) {
	for _, c := range []struct {
		entries string
		want    []string
	}{
		{`- {command: npx}`, []string{`mcp_servers[1].name: "" is not allowed: use a name of 1 to 32 letters, digits, '_' or '-' (it prefixes the server's tool names: name.tool)`}},
		{`- {name: "my server", command: npx}`, []string{`mcp_servers[1].name: "my server" is not allowed: use 1 to 32 letters`}},
		{`- {name: files}`, []string{`mcp_servers[files].command: "" is not allowed: use command: PROGRAM (a stdio server, with args, env and dir) or url: https://… (a streamable-HTTP server, with headers)`}},
		{`- {name: files, command: npx, url: "https://h/mcp"}`, []string{`mcp_servers[files].url: https://h/mcp is not allowed: use either command (a stdio server) or url (a streamable-HTTP server), not both`}},
		{`- {name: files, comand: npx}`, []string{`mcp_servers[files]: comand: is not allowed: use only the fields name, command, args, env, dir, url, headers, timeout (did you mean "command"?)`}},
		{`- {name: files, command: npx, args: "-y pkg"}`, []string{`mcp_servers[files].args: "-y pkg" is not allowed: use a list of arguments`}},
		{`- {name: files, command: npx, timeout: soon}`, []string{`mcp_servers[files].timeout: soon is not allowed: use a duration from 1s to 24h`}},
		{`- {name: files, command: npx, env: {"BAD-NAME": env-secret-x}}`, []string{`mcp_servers[files].env: BAD-NAME is not allowed: use variable names`}},
		{`- {name: files, command: npx, env: {TOKEN: "${bad-ref}"}}`, []string{`mcp_servers[files].env.TOKEN: [redacted] is not allowed: use ${NAME} references`}},
		{`- {name: files, command: npx, headers: {A: hdr-secret-x}}`, []string{`mcp_servers[files].headers: [redacted] is not allowed: use url for headers: a command takes env`}},
		{`- {name: web, url: "ftp://h/x?key=q-secret-x"}`, []string{`mcp_servers[web].url: ftp://h/x?key=xxxxx is not allowed: use an http or https URL`}},
		{`- {name: web, url: "https://user:pw-secret-x@h/mcp"}`, []string{`mcp_servers[web].url: `, `without user:password (put credentials in headers)`}},
		{`- {name: web, url: "https://h/mcp", args: [x]}`, []string{`use command for args, env and dir: a url server takes headers`}},
		{`- {name: web, url: "https://h/mcp", headers: {"Bad Header": v}}`, []string{`mcp_servers[web].headers: "Bad Header" is not allowed: use header names with values`}},
		{`- {name: web, url: "https://h/mcp", headers: {A: "hdr-secret-x\nB: c"}}`, []string{`mcp_servers[web].headers.A: [redacted] is not allowed: use a value without line breaks`}},
		{`- just-a-string`, []string{`mcp_servers[1]: just-a-string is not allowed: use an entry with name and either command (stdio) or url (streamable HTTP)`}},
		{"- {name: a, command: x}\n  - {name: a, command: y}", []string{`mcp_servers[2].name: a is not allowed: use a name of its own: entry 1 is called a already`}},
		{"- {command: x}\n  - {name: b}", []string{`mcp_servers[1].name`, `mcp_servers[b].command`}},
	} {
		l := isolate(t)
		l.File = writeFile(t, "config.yaml", "mcp_servers:\n  "+c.entries+"\n")
		_, err := l.Load()
		require.Error(t, err, c.entries)
		assert.True(t, errors.Is(err, ErrInvalid), c.entries)
		for _, w := range c.want {
			assert.Contains(t, err.Error(), w, c.entries)
		}
		assert.Contains(t, err.Error(), "(from file "+l.File+")")
		for _, secret := range []string{"env-secret-x", "hdr-secret-x", "q-secret-x", "pw-secret-x"} {
			assert.NotContains(t, err.Error(), secret, c.entries)
		}
	}

	l := isolate(t)
	l.File = writeFile(t, "config.yaml", "mcp_servers: {name: files}\n")
	_, err := l.Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `mcp_servers: "(the list)" is not allowed: use a list of servers`)

	l = isolate(t)
	l.File = writeFile(t, "config.yaml", "mcp_server:\n  - {name: files, command: npx}\n")
	_, err = l.Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown key "mcp_server"`)
	assert.Contains(t, err.Error(), `did you mean "mcp_servers"?`)
}

func TestMCPSelection(t *testing.T) {
	file := `
mcp_servers:
  - {name: files, command: npx, args: [-y, pkg]}
  - {name: search, url: "https://mcp.example.com/mcp"}
  - {name: git, command: uvx, args: [mcp-server-git]}
`
	load := func(t *testing.T, args ...string) (*Config, error) {
		l := isolate(t)
		l.File = writeFile(t, "config.yaml", file)
		return l.withFlags(t, args...).Load()
	}
	names := func(ss []MCPServer) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}

	c, err := load(t)
	require.NoError(t, err)
	sel, err := c.SelectedMCPServers()
	require.NoError(t, err)
	assert.Equal(t, []string{"files", "search", "git"}, names(sel), "without --mcp: every configured server")

	for _, args := range [][]string{{"--mcp", "git", "--mcp", "files"}, {"--mcp", "git,files"}, {"--mcp", "git files,git"}} {
		c, err = load(t, args...)
		require.NoError(t, err, args)
		sel, err = c.SelectedMCPServers()
		require.NoError(t, err, args)
		assert.Equal(t, []string{"git", "files"}, names(sel), args)
		assert.Equal(t, "flag --mcp", c.Source("agent.mcp").String())
	}

	for _, none := range []string{"none", "off"} {
		c, err = load(t, "--mcp", none)
		require.NoError(t, err)
		sel, err = c.SelectedMCPServers()
		require.NoError(t, err)
		assert.Empty(t, sel)
	}
	_, err = load(t, "--mcp", "none,files")
	assert.ErrorContains(t, err, "agent.mcp")

	// Ad hoc servers, beside configured ones.
	c, err = load(t, "--mcp", `notes=npx -y "@modelcontextprotocol/server-filesystem" '/home/me/my notes'`, "--mcp", "files", "--mcp", "remote=https://mcp.example.org/mcp")
	require.NoError(t, err)
	sel, err = c.SelectedMCPServers()
	require.NoError(t, err)
	require.Len(t, sel, 3)
	assert.Equal(t, MCPServer{Name: "notes", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/me/my notes"}, Timeout: DefaultMCPTimeout, AdHoc: true}, sel[0])
	assert.Equal(t, "files", sel[1].Name)
	assert.Equal(t, MCPServer{Name: "remote", URL: "https://mcp.example.org/mcp", Timeout: DefaultMCPTimeout, AdHoc: true}, sel[2])

	// From a variable: one ad-hoc server, or names.
	l := isolate(t)
	t.Setenv("DEEPGRAPH_AGENT_MCP", "x=my-server --flag")
	c, err = l.Load()
	require.NoError(t, err)
	sel, err = c.SelectedMCPServers()
	require.NoError(t, err)
	assert.Equal(t, []MCPServer{{Name: "x", Command: "my-server", Args: []string{"--flag"}, Timeout: DefaultMCPTimeout, AdHoc: true}}, sel)

	// Unknown names fail, listing the configured ones.
	c, err = load(t, "--mcp", "files,serach")
	require.NoError(t, err)
	_, err = c.SelectedMCPServers()
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrInvalid))
	assert.Equal(t, "agent.mcp: serach is not allowed: use names of MCP servers in mcp_servers (mcp_servers configures files, search, git), none, or NAME=COMMAND ARGS… / NAME=https://URL for a server not in the file (from flag --mcp)", err.Error())

	c, err = load(t, "--mcp", "files=other-command")
	require.NoError(t, err)
	_, err = c.SelectedMCPServers()
	assert.ErrorContains(t, err, "use another name: files is a server of mcp_servers already")

	for _, bad := range []string{"bad name=x", "x=", `x=npx "unclosed`, "x=https://", "a.b"} {
		_, err = load(t, "--mcp", bad)
		assert.ErrorContains(t, err, "agent.mcp: ", bad)
	}

	// research config shows the selection.
	c, err = load(t)
	require.NoError(t, err)
	assert.Contains(t, c.String(), "agent.mcp ")
	assert.Contains(t, c.String(), "all of mcp_servers")
}

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		`npx -y pkg`:                      {"npx", "-y", "pkg"},
		`  npx   -y  `:                    {"npx", "-y"},
		`cmd 'a b' "c d" e\ f`:            {"cmd", "a b", "c d", "e f"},
		`cmd "say \"hi\"" 'it''s'`:        {"cmd", `say "hi"`, "its"},
		`cmd "a\nb" 'c\d'`:                {"cmd", `a\nb`, `c\d`},
		`cmd --path="/my dir"/x`:          {"cmd", "--path=/my dir/x"},
		`cmd '' ""`:                       {"cmd", "", ""},
		`uvx mcp-server-git --repo $HOME`: {"uvx", "mcp-server-git", "--repo", "$HOME"},
	} {
		got, err := splitCommand(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{`cmd 'open`, `cmd "open`, `cmd \`} {
		_, err := splitCommand(in)
		assert.Error(t, err, in)
	}
}

func TestMCPExpand(t *testing.T) {
	s := MCPServer{Name: "files", Command: "npx", Env: map[string]Secret{"TOKEN": "${A}", "MIXED": "pre-${B}-post", "PLAIN": "x$y"},
		Headers: map[string]Secret{"Authorization": "Bearer ${A}"}}
	env := map[string]string{"A": "alpha-secret", "B": "beta"}
	got, err := s.Expand(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.NoError(t, err)
	assert.Equal(t, map[string]Secret{"TOKEN": "alpha-secret", "MIXED": "pre-beta-post", "PLAIN": "x$y"}, got.Env)
	assert.Equal(t, map[string]Secret{"Authorization": "Bearer alpha-secret"}, got.Headers)
	assert.Equal(t, Secret("${A}"), s.Env["TOKEN"], "the original is untouched")

	_, err = s.Expand(func(k string) (string, bool) { return "", false })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MCP server files: env.TOKEN refers to ${A}, which is not set: set the variable, or write the value in the config file")
	assert.Contains(t, err.Error(), "headers.Authorization refers to ${A}")
}

// The key table of docs/configuration.md has the MCP rows (TestDocsListEveryKey checks
// them with every other key); here: the flag is a repeatable list.
func TestMCPFlag(t *testing.T) {
	fs := flags(t, "--mcp", "a", "--mcp", "b=x --y,z")
	f := fs.Lookup("mcp")
	require.NotNil(t, f)
	assert.Equal(t, "stringArray", f.Value.Type())
	l := isolate(t)
	l.Flags = fs
	c, err := l.Load()
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b=x --y,z"}, c.Agent.MCP, "a comma inside an ad-hoc command survives")
}
