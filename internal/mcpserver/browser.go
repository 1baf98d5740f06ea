package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepgraph/deepgraph/tools"
)

// BrowserSession is the browser of one MCP session: a tool (the browser
// tool of package tools/browser, whose results carry the page state) that
// holds a browser until Close.
type BrowserSession interface {
	tools.Tool
	Close()
}

// browsers keeps one browser per MCP session, made at the session's first
// browser call and closed when the session ends or the server stops.
type browsers struct {
	open func() (BrowserSession, error)
	base context.Context

	mu     sync.Mutex
	byConn map[*mcp.ServerSession]BrowserSession
	closed bool
}

func newBrowsers(base context.Context, open func() (BrowserSession, error)) *browsers {
	b := &browsers{open: open, base: base, byConn: map[*mcp.ServerSession]BrowserSession{}}
	context.AfterFunc(base, b.closeAll)
	return b
}

// of returns the browser of session ss, opening it at its first call.
func (b *browsers) of(ss *mcp.ServerSession) (BrowserSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errShutdown
	}
	if s, ok := b.byConn[ss]; ok {
		return s, nil
	}
	s, err := b.open()
	if err != nil {
		return nil, err
	}
	b.byConn[ss] = s
	if ss != nil {
		// The session's end closes its browser (the server's stop closes
		// them all, see newBrowsers); the goroutine ends with the session.
		go func() {
			_ = ss.Wait()
			b.close(ss)
		}()
	}
	return s, nil
}

func (b *browsers) close(ss *mcp.ServerSession) {
	b.mu.Lock()
	s, ok := b.byConn[ss]
	delete(b.byConn, ss)
	b.mu.Unlock()
	if ok {
		s.Close()
	}
}

func (b *browsers) closeAll() {
	b.mu.Lock()
	b.closed = true
	all := b.byConn
	b.byConn = map[*mcp.ServerSession]BrowserSession{}
	b.mu.Unlock()
	for _, s := range all {
		s.Close()
	}
}

// addBrowser offers the browser tool: the tool of the calling session's
// own browser, its Result as the call's result (the page state included,
// a screenshot as an image).
func (s *handlers) addBrowser(srv *mcp.Server) error {
	tmpl, err := s.opts.Browser()
	if err != nil {
		return fmt.Errorf("mcpserver: the browser: %w", err)
	}
	name, desc, params := tmpl.Name(), tmpl.Description(), tmpl.Parameters()
	tmpl.Close() // it never started a browser
	s.browsers = newBrowsers(s.base, s.opts.Browser)
	open := true
	ann := &mcp.ToolAnnotations{Title: "Web browser", DestructiveHint: &open, OpenWorldHint: &open}
	srv.AddTool(&mcp.Tool{Name: name, Title: "Web browser", Description: desc, InputSchema: params, Annotations: ann},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := req.Params.Arguments
			if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
				args = json.RawMessage(`{}`)
			}
			ctx, cancel := s.callContext(ctx)
			defer cancel()
			b, err := s.browsers.of(req.Session)
			if err != nil {
				return errorResult(fmt.Sprintf("%s: %s", name, s.text(err))), nil
			}
			res, err := b.Run(ctx, args)
			if err != nil {
				msg := fmt.Sprintf("%s failed: %s", name, s.text(err))
				if ctx.Err() != nil {
					msg = fmt.Sprintf("%s was cancelled", name)
				}
				return errorResult(msg), nil
			}
			return toolResult(res), nil
		})
	return nil
}
