package mcp

import (
	"net/http"
	"net/url"
	"strings"
)

// headerTransport adds a server's headers to the requests for its own
// origin. A request elsewhere (after a redirect) goes without them, so a
// credential cannot follow a redirect to another host.
type headerTransport struct {
	base    http.RoundTripper
	scheme  string
	host    string
	headers map[string]string
}

func newHTTPClient(s Server, base *http.Client) *http.Client {
	var c http.Client
	if base != nil {
		c = *base
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if len(s.Headers) > 0 {
		u, _ := url.Parse(s.URL) // validated
		rt = &headerTransport{base: rt, scheme: u.Scheme, host: strings.ToLower(u.Host), headers: s.Headers}
	}
	c.Transport = rt
	return &c
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != t.scheme || strings.ToLower(req.URL.Host) != t.host {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}
