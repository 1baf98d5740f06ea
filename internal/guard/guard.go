// Package guard is the one implementation of the checks every HTTP
// endpoint of deepgraph applies before its handlers — research serve's
// APIs (package agentserver and the older one), research mcp --http: the
// security headers, the Host check of a loopback endpoint (no DNS
// rebinding), the Origin allow-list with CORS, and the token.
//
// Each endpoint keeps its own error document: Wrap calls its Refuse.
package guard

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
)

// Options configure Wrap.
type Options struct {
	// Token, when set, must come with every request but those Open lets
	// through, as Authorization: Bearer or x-api-key (what LangGraph's
	// SDKs send).
	Token string
	// Open, when set, says which requests need no token (a health check).
	Open func(*http.Request) bool
	// CORSOrigins are the other origins whose pages may call the endpoint,
	// lower case, without a trailing slash. Any other cross-site Origin is
	// refused — even a simple POST that a browser sends without a preflight.
	CORSOrigins []string
	// Loopback says the endpoint listens on loopback only: requests must
	// then name a loopback host.
	Loopback bool
	// ContentSecurityPolicy is sent with every response when set.
	ContentSecurityPolicy string
	// AllowHeaders are the request headers a listed origin's preflight may
	// ask for; ExposeHeaders the response headers its scripts may read.
	AllowHeaders  []string
	ExposeHeaders []string
	// Realm is the WWW-Authenticate realm of a refusal for want of the
	// token; TokenHint says how to send the token, OriginHint how to allow
	// an origin (the end of their refusals' messages).
	Realm, TokenHint, OriginHint string
	// Refuse writes a refusal: status and message, in the endpoint's own
	// error document. The connection is closed after it (Connection:
	// close is set): a refused client has nothing to keep it open for.
	Refuse func(w http.ResponseWriter, status int, msg string)
}

// Wrap applies the checks to every request, then serves it with next.
func Wrap(next http.Handler, o Options) http.Handler {
	allowHeaders := strings.Join(o.AllowHeaders, ", ")
	if allowHeaders == "" {
		allowHeaders = "Authorization, Content-Type"
	}
	exposeHeaders := strings.Join(o.ExposeHeaders, ", ")
	origins := make([]string, len(o.CORSOrigins))
	for i, s := range o.CORSOrigins {
		origins[i] = strings.ToLower(strings.TrimRight(s, "/"))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if o.ContentSecurityPolicy != "" {
			h.Set("Content-Security-Policy", o.ContentSecurityPolicy)
		}
		if o.Loopback && !LoopbackHost(r.Host) {
			h.Set("Connection", "close")
			o.Refuse(w, http.StatusMisdirectedRequest,
				fmt.Sprintf("host %q is not this server's: it listens on loopback, so use http://127.0.0.1 or http://localhost", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !SameOrigin(origin, r) {
			if !slices.Contains(origins, strings.ToLower(origin)) {
				h.Set("Connection", "close")
				o.Refuse(w, http.StatusForbidden, fmt.Sprintf("origin %s may not call this API; %s", origin, o.OriginHint))
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if exposeHeaders != "" {
				h.Set("Access-Control-Expose-Headers", exposeHeaders)
			}
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
				h.Set("Access-Control-Allow-Headers", allowHeaders)
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if o.Token != "" && (o.Open == nil || !o.Open(r)) && !Authorized(r, o.Token) {
			h.Set("WWW-Authenticate", `Bearer realm="`+o.Realm+`"`)
			h.Set("Connection", "close")
			o.Refuse(w, http.StatusUnauthorized, "this server needs its token: "+o.TokenHint)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Authorized reports whether r carries token as Authorization: Bearer or
// as x-api-key, compared in constant time.
func Authorized(r *http.Request, token string) bool {
	got := r.Header.Get("X-Api-Key")
	if got == "" {
		var ok bool
		if got, ok = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok {
			return false
		}
	}
	got = strings.TrimSpace(got)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// SameOrigin reports whether a request's Origin is the server's own.
func SameOrigin(origin string, r *http.Request) bool {
	o := strings.ToLower(origin)
	host := strings.ToLower(r.Host)
	return o == "http://"+host || o == "https://"+host
}

// LoopbackHost reports whether a Host header names this machine.
func LoopbackHost(hostport string) bool {
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
