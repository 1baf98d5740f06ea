package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/deepgraph/deepgraph/internal/guard"
)

// GuardOptions configure Guard: the security of an HTTP endpoint that runs
// research on the operator's keys (research serve's API, research mcp
// --http). Guard sets the refusals' wording and shape (Realm, TokenHint,
// OriginHint, Refuse) itself.
type GuardOptions = guard.Options

// Guard applies to every request: security headers, the Host check on a
// loopback endpoint, the Origin check and CORS, then the token (package
// guard, the one implementation of these checks, which the Agent Server
// API applies too). Refusals are JSON errors, {"error":{"code":…,
// "message":…}}, that say how to get through, sent with Connection: close
// so that a refused client does not hold a connection (see
// internal/httpserve for the limits on those).
func Guard(next http.Handler, o GuardOptions) http.Handler {
	o.Realm, o.TokenHint, o.OriginHint = "deepgraph", tokenHint, "list it under serve.cors_origins to allow it"
	o.Refuse = func(w http.ResponseWriter, status int, msg string) {
		code := codeForbidden
		if status == http.StatusUnauthorized {
			code = codeUnauthorized
		}
		writeError(w, status, code, msg)
	}
	return guard.Wrap(next, o)
}

// tokenHint says how to send the token.
const tokenHint = "send Authorization: Bearer <serve.token>"

// IsLoopback reports whether an address to listen on (host:port) reaches
// this machine only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrNeedsToken is Check's refusal to listen beyond loopback without a
// token.
var ErrNeedsToken = errors.New("a token is needed to listen beyond loopback")

// Check refuses to serve the API beyond this machine without a token.
func Check(addr, token string) error {
	if IsLoopback(addr) || token != "" {
		return nil
	}
	return fmt.Errorf("%w: %s is reachable from other machines, and anyone reaching it could start runs on your keys. "+
		"Set a token (serve.token in the config file, or DEEPGRAPH_SERVE_TOKEN=$(openssl rand -hex 32)) and send it as "+
		"Authorization: Bearer …, or listen on 127.0.0.1", ErrNeedsToken, addr)
}
