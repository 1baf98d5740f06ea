package nodes

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/deepgraph/deepgraph/tools"
)

// DefaultMaxTools is AgentConfig.MaxTools's default: OpenAI's limit of
// tools in one request, the lowest of the major providers'.
const DefaultMaxTools = 128

// ErrTooManyTools is the error of a step whose tool set, after
// AgentConfig.AllowTools and DenyTools, has more tools than
// AgentConfig.MaxTools: the provider would refuse the request.
var ErrTooManyTools = errors.New("too many tools for the model")

// toolAllowed reports whether name passes the allow-list and the
// deny-list. A pattern is a tool's name or a shell pattern (path.Match):
// "server.*" names every tool of an MCP server, "*" every tool. terminate
// always passes: a run needs it to end.
func toolAllowed(name string, allow, deny []string) bool {
	if name == tools.TerminateName {
		return true
	}
	for _, p := range deny {
		if matchTool(p, name) {
			return false
		}
	}
	if len(allow) == 0 {
		return true
	}
	for _, p := range allow {
		if matchTool(p, name) {
			return true
		}
	}
	return false
}

func matchTool(pattern, name string) bool {
	pattern = strings.TrimSpace(pattern)
	if pattern == name {
		return true
	}
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// filterTools narrows c to the tools the agent may use.
func (a *Agent) filterTools(c *tools.Collection) *tools.Collection {
	if len(a.cfg.AllowTools) == 0 && len(a.cfg.DenyTools) == 0 {
		return c
	}
	var keep []string
	for _, n := range c.Names() {
		if toolAllowed(n, a.cfg.AllowTools, a.cfg.DenyTools) {
			keep = append(keep, n)
		}
	}
	if len(keep) == len(c.Names()) {
		return c
	}
	sub, err := c.Subset(keep...)
	if err != nil {
		return c // cannot happen: the names are c's
	}
	return sub
}

// checkToolCount refuses a tool set larger than the model accepts.
func (a *Agent) checkToolCount(c *tools.Collection) error {
	if n := len(c.Names()); n > a.cfg.MaxTools {
		return fmt.Errorf("nodes: agent: %w: the step offers %d tools but the model accepts at most %d (AgentConfig.MaxTools): narrow them with an allow-list (AgentConfig.AllowTools; --tools on the command line, e.g. server.* or server.tool for MCP tools) or a deny-list (AgentConfig.DenyTools; --deny-tools)",
			ErrTooManyTools, n, a.cfg.MaxTools)
	}
	return nil
}
