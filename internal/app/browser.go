package app

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/tools/browser"
)

// NewBrowser builds the browser tool of one run (agent.browser): a
// headless Chromium, started at its first action, behind the SSRF guard of
// the page reader (allow_private_urls opens private addresses to it too),
// reading pages into Markdown with reader. slots, when set, bounds the
// browsers running at once among the runs that share it (a server's).
// stateInResult appends the page state to every result, for a caller that
// does not show it before each step (an MCP client). No Chromium is a
// setup error that says how to install it.
func NewBrowser(cfg *config.Config, reader *search.Reader, slots *browser.Slots, logger *slog.Logger, stateInResult bool) (*browser.Session, error) {
	s, err := browser.New(browser.Options{
		Chromium:      cfg.Browser.Chromium,
		Guard:         guardConfig(cfg),
		Reader:        reader,
		ActionTimeout: cfg.Browser.ActionTimeout,
		MaxPages:      cfg.Browser.MaxPages,
		MaxTabs:       cfg.Browser.MaxTabs,
		NoSandbox:     cfg.Browser.NoSandbox,
		Slots:         slots,
		StateInResult: stateInResult,
		Logger:        logger,
	})
	switch {
	case errors.Is(err, browser.ErrNoChromium):
		msg := strings.TrimPrefix(err.Error(), "browser: ")
		return nil, setupErr("the browser tool (--browser, agent.browser) needs Chromium: %s", msg)
	case err != nil:
		return nil, setupErr("the browser tool: %s", strings.TrimPrefix(err.Error(), "browser: "))
	}
	return s, nil
}

// browserToolError says why the agent's tool list cannot name the browser.
func browserToolError(cfg *config.Config) error {
	return &setupError{cfg.Invalid("agent.tools", strings.Join(cfg.Agent.Tools, ","),
		"only available tools; "+browser.Name+" also needs --browser (agent.browser)", nil)}
}

// BrowserSlots bounds the browsers the runs of the pool run at once
// (serve.max_browsers); the bound is the first configuration's.
func (p *Pool) BrowserSlots(cfg *config.Config) *browser.Slots {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.browsers == nil {
		p.browsers = browser.NewSlots(cfg.Serve.MaxBrowsers)
	}
	return p.browsers
}

// browserNote is the line that says a run has a browser, for the CLI.
func browserNote(cfg *config.Config, s *browser.Session) string {
	reach := "public addresses only"
	if cfg.AllowPrivateURLs {
		reach = "public and private addresses (allow_private_urls)"
	}
	return fmt.Sprintf("Browser: %s, headless, %s, started at its first action", s.Chromium(), reach)
}

// CheckBrowser reports, as NewBrowser would, that the browser tool cannot
// run here: no Chromium. A server checks it at start, not at the first run.
func CheckBrowser(cfg *config.Config) error {
	if _, err := browser.FindChromium(cfg.Browser.Chromium); err != nil {
		return setupErr("the browser tool (--browser, agent.browser) needs Chromium: %s", strings.TrimPrefix(err.Error(), "browser: "))
	}
	return nil
}
