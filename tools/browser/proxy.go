package browser

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/search/netguard"
)

// The browser's network: Chromium reaches the network only through an HTTP
// proxy of ours on loopback (--proxy-server, with --proxy-bypass-list
// "<-loopback>" so that loopback addresses go through it too). The proxy
// dials only what the SSRF guard admits, on the address it checked itself:
// plain HTTP requests go through the guard's transport, HTTPS and secure
// WebSockets through CONNECT tunnels dialled by the guard. Every request of
// every tab, frame, popup and worker takes that road — navigations,
// redirects (each hop is a new request), iframes and subresources alike —
// and Chromium never resolves a host name itself, so a DNS answer cannot
// differ between check and connect.
//
// Chromium's own request interception (the Fetch domain) was the other
// road: it sees the URL before the request, but only in the targets that
// enable it (not the cross-site iframes and workers of a page), and
// Chromium would then resolve and connect on its own after the check.

// maxRefusals bounds the refusals kept between two reads.
const maxRefusals = 20

// refusal is a request the proxy refused.
type refusal struct {
	// Target is the URL (plain HTTP) or host:port (a tunnel) refused.
	Target string
	// Reason says why, in the guard's words.
	Reason string
}

// proxy is the guarded forward proxy of one browser.
type proxy struct {
	guard  *netguard.Guard
	ln     net.Listener
	srv    *http.Server
	rp     *httputil.ReverseProxy
	tr     *http.Transport // the guard's, under rp
	logger *slog.Logger

	mu      sync.Mutex
	refused []refusal
	dropped int
	tunnels map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup // tunnel copiers
}

// startProxy listens on a loopback port and serves the proxy.
func startProxy(g *netguard.Guard, logger *slog.Logger) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("browser: starting the network proxy: %w", err)
	}
	p := &proxy{guard: g, ln: ln, logger: logger, tunnels: map[net.Conn]struct{}{}, tr: g.Transport()}
	p.rp = &httputil.ReverseProxy{
		// The request is in proxy form (an absolute URL): it goes where it
		// says, with the hop-by-hop headers removed and nothing added.
		Rewrite:      func(*httputil.ProxyRequest) {},
		Transport:    g.Wrap(p.tr),
		ErrorHandler: p.failed,
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// addr is the proxy's host:port.
func (p *proxy) addr() string { return p.ln.Addr().String() }

// close stops the proxy, cuts the tunnels that are open and closes its
// connections to the sites.
func (p *proxy) close() {
	_ = p.srv.Close()
	p.tr.CloseIdleConnections()
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// takeRefusals returns the refusals since the last call, and how many more
// there were than it keeps.
func (p *proxy) takeRefusals() ([]refusal, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out, dropped := p.refused, p.dropped
	p.refused, p.dropped = nil, 0
	return out, dropped
}

func (p *proxy) refuse(target string, err error) {
	if strings.HasSuffix(target, "/favicon.ico") {
		return // the browser's own request for a refused page's icon
	}
	reason := strings.TrimPrefix(err.Error(), "netguard: ")
	var be *netguard.BlockedError
	if errors.As(err, &be) {
		reason = describeBlocked(be)
	}
	p.logger.Debug("browser: request refused", "target", target, "why", reason)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.refused {
		if r.Target == target {
			return
		}
	}
	if len(p.refused) >= maxRefusals {
		p.dropped++
		return
	}
	p.refused = append(p.refused, refusal{Target: target, Reason: reason})
}

// describeBlocked says what a refused destination is, without saying how
// to lift the guard: that is the operator's decision, not the model's.
func describeBlocked(be *netguard.BlockedError) string {
	if be.Kind == netguard.KindScheme || be.Kind == netguard.KindInvalid {
		return be.Reason
	}
	what := be.Host
	if be.Addr.IsValid() && strings.Trim(be.Host, "[]") != be.Addr.String() {
		what = fmt.Sprintf("%s (%s)", be.Host, be.Addr)
	}
	return fmt.Sprintf("%s is %s; only public web addresses can be reached", what, be.Reason)
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		p.tunnel(w, r)
	case r.URL.IsAbs():
		p.rp.ServeHTTP(w, r)
	default:
		http.Error(w, "this is a forward proxy: send requests for absolute URLs", http.StatusBadRequest)
	}
}

// failed answers a request the proxy could not forward: a page saying why,
// which the model sees in the browser.
func (p *proxy) failed(w http.ResponseWriter, r *http.Request, err error) {
	target := r.URL.Redacted()
	status, msg := http.StatusBadGateway, "the site could not be reached: "+strings.TrimPrefix(err.Error(), "netguard: ")
	if errors.Is(err, netguard.ErrBlocked) {
		p.refuse(target, err)
		status, msg = http.StatusForbidden, "refused: "+p.lastReason(target)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>Not loaded</title><h1>Not loaded</h1><p>%s: %s</p>", html.EscapeString(target), html.EscapeString(msg))
}

func (p *proxy) lastReason(target string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.refused {
		if r.Target == target {
			return r.Reason
		}
	}
	return "the destination is not allowed"
}

// tunnel serves CONNECT: it dials host:port through the guard and copies
// bytes both ways.
func (p *proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	upstream, err := p.guard.DialContext(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		if errors.Is(err, netguard.ErrBlocked) {
			p.refuse(r.Host, err)
			http.Error(w, "refused: "+p.lastReason(r.Host), http.StatusForbidden)
			return
		}
		http.Error(w, "cannot reach "+r.Host, http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = upstream.Close()
		http.Error(w, "tunnels are not supported here", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		_ = upstream.Close()
		return
	}
	if !p.track(client, upstream) {
		return
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		p.untrack(client, upstream)
		p.wg.Add(-2)
		return
	}
	go func() {
		defer p.wg.Done()
		// What the client sent after the CONNECT line, then the rest.
		_, _ = io.Copy(upstream, buf.Reader)
		closeWrite(upstream)
	}()
	go func() {
		defer p.wg.Done()
		_, _ = io.Copy(client, upstream)
		p.untrack(client, upstream)
	}()
}

// track registers a tunnel's connections, so that close cuts them, and
// counts its two copiers in p.wg; it reports false (and closes them) when
// the proxy is closed already. The count is taken under p.mu, before close
// can see p.closed and wait: an Add after the client has its "200" would
// race with close's Wait.
func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	p.wg.Add(2)
	return true
}

func (p *proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.tunnels, c)
	}
}

// closeWrite half-closes c when it can, so that the other side sees the
// end of what was sent.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
