package mcpserver

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepgraph/deepgraph/internal/server"
)

// Paths of Handler.
const (
	PathMCP     = "/mcp"
	PathHealthz = "/healthz"
)

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Guard is the security of the endpoint, research serve's: the token,
	// the CORS origins, the loopback Host check. /healthz needs no token.
	Guard server.GuardOptions
	// SessionTimeout closes a session idle for this long (default 30
	// minutes; a call in flight keeps it alive).
	SessionTimeout time.Duration
	// Logger receives the transport's records (may be nil).
	Logger *slog.Logger
}

// DefaultSessionTimeout is HTTPOptions.SessionTimeout's default.
const DefaultSessionTimeout = 30 * time.Minute

// Handler serves srv over MCP's streamable HTTP transport at /mcp, and a
// liveness check at /healthz, behind server.Guard.
func Handler(srv *mcp.Server, o HTTPOptions) http.Handler {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger:                       sdkLogger(o.Logger),
		SessionTimeout:               o.SessionTimeout,
		PropagateRequestCancellation: true,
	})
	mux := http.NewServeMux()
	mux.Handle(PathMCP, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		streamable.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET "+PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	g := o.Guard
	g.Open = func(r *http.Request) bool { return r.URL.Path == PathHealthz }
	g.ContentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'"
	g.AllowHeaders = []string{"Authorization", "Content-Type", "Accept", "Last-Event-ID", "Mcp-Session-Id", "Mcp-Protocol-Version"}
	g.ExposeHeaders = []string{"Mcp-Session-Id"}
	return server.Guard(mux, g)
}

// CloseSessions closes srv's sessions (after ending their calls: cancel
// New's context first), so that an http.Server's Shutdown does not wait
// for their open streams.
func CloseSessions(srv *mcp.Server) {
	for ss := range srv.Sessions() {
		_ = ss.Close()
	}
}
