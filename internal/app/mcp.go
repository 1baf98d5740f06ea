package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/tools"
	"github.com/deepgraph/deepgraph/tools/mcp"
)

// MCPServers returns the MCP servers agent runs use — those agent.mcp
// (--mcp) names, else every server of mcp_servers; none for --mcp none — as
// mcp.Servers, the ${NAME} references of their env values and headers
// replaced by the variables' values. An unknown name or an unset variable
// is a setup error naming the server and the field.
func MCPServers(cfg *config.Config) ([]mcp.Server, error) {
	selected, err := cfg.SelectedMCPServers()
	if err != nil {
		return nil, &setupError{err}
	}
	out := make([]mcp.Server, 0, len(selected))
	var errs []error
	for _, s := range selected {
		s, err := s.Expand(os.LookupEnv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		srv := mcp.Server{Name: s.Name, Command: s.Command, Args: s.Args, Dir: s.Dir, URL: s.URL, Timeout: s.Timeout,
			Env: reveal(s.Env), Headers: reveal(s.Headers)}
		if err := srv.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, srv)
	}
	if len(errs) > 0 {
		return nil, &setupError{errors.Join(errs...)}
	}
	return out, nil
}

func reveal(m map[string]config.Secret) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.Reveal()
	}
	return out
}

// MCPSet is the MCP servers a run is connected to. Its methods accept a
// nil set (no servers).
type MCPSet struct {
	clients []*mcp.Client
}

// ConnectMCP starts or reaches servers, all at once, and lists their tools.
// If one fails, the others are stopped and the error — a setup error —
// names it. No servers give an empty set. Close the set when the run ends.
func ConnectMCP(ctx context.Context, servers []mcp.Server, logger *slog.Logger) (*MCPSet, error) {
	set := &MCPSet{clients: make([]*mcp.Client, len(servers))}
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			set.clients[i], errs[i] = mcp.Connect(ctx, s, mcp.Options{Logger: logger, ClientName: "deepgraph"})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		set.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &setupError{fmt.Errorf("%w (--mcp none runs the agent without MCP servers)", err)}
	}
	// Tool names are unique per server; two servers whose names sanitise
	// alike ("1x" and "_1x") would still clash.
	colls := make([]*tools.Collection, len(set.clients))
	for i, c := range set.clients {
		colls[i], _ = c.Collection(ctx)
	}
	if _, err := tools.Merge(colls...); err != nil {
		set.Close()
		return nil, setupErr("MCP servers %s: their tools' names clash (%v): rename one of the servers", strings.Join(set.Names(), ", "), err)
	}
	return set, nil
}

// OpenMCP connects to the MCP servers cfg selects (MCPServers, then
// ConnectMCP).
func OpenMCP(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*MCPSet, error) {
	servers, err := MCPServers(cfg)
	if err != nil {
		return nil, err
	}
	return ConnectMCP(ctx, servers, logger)
}

// Clients returns the connections, one per server.
func (s *MCPSet) Clients() []*mcp.Client {
	if s == nil {
		return nil
	}
	return s.clients
}

// Dynamic returns the servers' tool sets, for nodes.AgentConfig.Dynamic.
func (s *MCPSet) Dynamic() []tools.Dynamic {
	if s == nil || len(s.clients) == 0 {
		return nil
	}
	out := make([]tools.Dynamic, len(s.clients))
	for i, c := range s.clients {
		out[i] = c
	}
	return out
}

// Names returns the servers' names.
func (s *MCPSet) Names() []string {
	var out []string
	for _, c := range s.Clients() {
		if c != nil {
			out = append(out, c.Name())
		}
	}
	return out
}

// Summary describes the servers and their tools for a run's header:
// "files (14 tools), search (2 tools)"; "" for none.
func (s *MCPSet) Summary() string {
	parts := make([]string, 0, len(s.Clients()))
	for _, c := range s.Clients() {
		n := len(c.Tools())
		word := "tools"
		if n == 1 {
			word = "tool"
		}
		parts = append(parts, fmt.Sprintf("%s (%d %s)", c.Name(), n, word))
	}
	return strings.Join(parts, ", ")
}

// Close stops every server (stdio servers are stopped and reaped), all at
// once, and waits for them.
func (s *MCPSet) Close() {
	var wg sync.WaitGroup
	for _, c := range s.Clients() {
		if c != nil {
			wg.Go(func() { _ = c.Close() })
		}
	}
	wg.Wait()
}
