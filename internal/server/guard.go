package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
)

// GuardOptions configure Guard: the security of an HTTP endpoint that runs
// research on the operator's keys (research serve's API, research mcp
// --http).
type GuardOptions struct {
	// Token, when set, is the bearer token every request must carry as
	// Authorization: Bearer, but those Open lets through.
	Token string
	// Open, when set, says which requests need no token (a health check).
	Open func(*http.Request) bool
	// CORSOrigins are the other origins whose pages may call the endpoint.
	// Any other cross-site Origin is refused — even a simple POST that a
	// browser sends without a preflight.
	CORSOrigins []string
	// Loopback says the endpoint listens on loopback only: requests must
	// then name a loopback host (no DNS rebinding).
	Loopback bool
	// ContentSecurityPolicy is sent with every response when set.
	ContentSecurityPolicy string
	// AllowHeaders are the request headers a listed origin's preflight may
	// ask for (default Authorization, Content-Type); ExposeHeaders the
	// response headers its scripts may read.
	AllowHeaders  []string
	ExposeHeaders []string
}

// Guard applies to every request: security headers, the Host check on a
// loopback endpoint, the Origin check and CORS, then the token. Refusals
// are JSON errors, {"error":{"code":…,"message":…}}, that say how to get
// through, sent with Connection: close so that a refused client does not
// hold a connection (see internal/httpserve for the limits on those).
func Guard(next http.Handler, o GuardOptions) http.Handler {
	allowHeaders := strings.Join(o.AllowHeaders, ", ")
	if allowHeaders == "" {
		allowHeaders = "Authorization, Content-Type"
	}
	exposeHeaders := strings.Join(o.ExposeHeaders, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if o.ContentSecurityPolicy != "" {
			h.Set("Content-Security-Policy", o.ContentSecurityPolicy)
		}
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if o.Loopback && !loopbackHost(r.Host) {
			h.Set("Connection", "close")
			writeError(w, http.StatusMisdirectedRequest, codeForbidden,
				fmt.Sprintf("host %q is not this server's: it listens on loopback, so use http://127.0.0.1 or http://localhost", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
			if !slices.Contains(o.CORSOrigins, strings.ToLower(origin)) {
				h.Set("Connection", "close")
				writeError(w, http.StatusForbidden, codeForbidden,
					fmt.Sprintf("origin %s may not call this API; list it under serve.cors_origins to allow it", origin))
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if exposeHeaders != "" {
				h.Set("Access-Control-Expose-Headers", exposeHeaders)
			}
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
				h.Set("Access-Control-Allow-Headers", allowHeaders)
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if o.Token != "" && (o.Open == nil || !o.Open(r)) && !Authorized(r, o.Token) {
			writeUnauthorized(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Authorized reports whether r carries token as Authorization: Bearer.
func Authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// writeUnauthorized refuses a request without the token, and closes its
// connection after the answer: a client without the token has nothing to
// keep it open for.
func writeUnauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="deepgraph"`)
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusUnauthorized, codeUnauthorized, "this server needs its token: send Authorization: Bearer <serve.token>")
}

// sameOrigin reports whether a request's Origin is the server's own.
func sameOrigin(origin string, r *http.Request) bool {
	o := strings.ToLower(origin)
	host := strings.ToLower(r.Host)
	return o == "http://"+host || o == "https://"+host
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(strings.ToLower(host), "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

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
