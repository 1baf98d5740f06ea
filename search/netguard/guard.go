package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultMaxRedirects = 10
	DefaultDialTimeout  = 10 * time.Second
)

// ErrBlocked matches every *BlockedError with errors.Is.
var ErrBlocked = errors.New("netguard: destination not allowed")

// Resolver looks up a host's addresses. *net.Resolver implements it; tests
// inject a fake to make a public-looking name resolve anywhere they like.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config tunes a Guard. The zero value is the safe default: public http and
// https destinations only, the system resolver, at most DefaultMaxRedirects
// redirects.
type Config struct {
	// AllowPrivate admits loopback, private (RFC 1918, fc00::/7), link-local
	// and CGNAT addresses, for self-hosted setups (the CLI's
	// allow-private-urls). Cloud-metadata endpoints and special ranges
	// (multicast, broadcast, unspecified, reserved, documentation) stay
	// refused; list them in Allow if you really mean to reach them.
	AllowPrivate bool
	// Allow lists destinations permitted whatever the rules say. Each entry
	// is a CIDR prefix ("10.1.0.0/16", "fd12::/16"), a single address
	// ("127.0.0.1", "::1"), a host name ("wiki.corp.example") or a wildcard
	// for a name's subdomains ("*.corp.example"). A listed name is trusted
	// whatever it resolves to. Empty by default.
	Allow []string
	// Resolver looks up host names; nil means net.DefaultResolver.
	Resolver Resolver
	// MaxRedirects bounds the redirects a client follows; 0 means
	// DefaultMaxRedirects, negative means none are followed.
	MaxRedirects int
	// DialTimeout bounds each TCP connect; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
}

// Guard decides which destinations may be fetched and dials only those. It
// is safe for concurrent use.
type Guard struct {
	allowPrivate bool
	prefixes     []netip.Prefix
	names        map[string]bool
	suffixes     []string // ".corp.example" for "*.corp.example"
	resolver     Resolver
	maxRedirects int
	// dial connects to an already checked address; tests replace it.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// New builds a Guard. It fails on an Allow entry it cannot parse.
func New(cfg Config) (*Guard, error) {
	g := &Guard{
		allowPrivate: cfg.AllowPrivate,
		names:        map[string]bool{},
		resolver:     cfg.Resolver,
		maxRedirects: cfg.MaxRedirects,
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	if g.maxRedirects == 0 {
		g.maxRedirects = DefaultMaxRedirects
	}
	dt := cfg.DialTimeout
	if dt <= 0 {
		dt = DefaultDialTimeout
	}
	g.dial = (&net.Dialer{Timeout: dt, KeepAlive: 30 * time.Second}).DialContext
	for _, entry := range cfg.Allow {
		if err := g.addAllow(entry); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *Guard) addAllow(entry string) error {
	e := strings.ToLower(strings.TrimSpace(entry))
	bad := func(why string) error {
		return fmt.Errorf("netguard: allow-list entry %q: %s (want a CIDR such as 10.0.0.0/8, an address, a host name or *.domain)", entry, why)
	}
	switch {
	case e == "":
		return bad("empty")
	case strings.Contains(e, "/"):
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return bad(err.Error())
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		g.prefixes = append(g.prefixes, p.Masked())
	case isIPLiteral(e):
		a, err := netip.ParseAddr(strings.Trim(e, "[]"))
		if err != nil {
			return bad(err.Error())
		}
		a = a.WithZone("").Unmap()
		g.prefixes = append(g.prefixes, netip.PrefixFrom(a, a.BitLen()))
	case strings.HasPrefix(e, "*."):
		rest := strings.TrimSuffix(e[2:], ".")
		if rest == "" || !validName(rest) {
			return bad("invalid wildcard")
		}
		g.suffixes = append(g.suffixes, "."+rest)
	default:
		name := strings.TrimSuffix(e, ".")
		if !validName(name) {
			return bad("invalid host name")
		}
		g.names[name] = true
	}
	return nil
}

// isIPLiteral reports whether s looks like an address rather than a name:
// it contains a colon (IPv6) or parses as an address.
func isIPLiteral(s string) bool {
	if strings.Contains(s, ":") {
		return true
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// BlockedError is a refused destination. It matches ErrBlocked.
type BlockedError struct {
	// URL is the refused URL when known (CheckURL, CheckRedirect, Wrap);
	// empty when the refusal happened at dial time, where the
	// *url.Error that http.Client wraps around this error names the URL.
	URL string
	// Host is the host as requested.
	Host string
	// Addr is the refused address; invalid when the host itself (its name,
	// its form or the scheme) was refused.
	Addr netip.Addr
	// Kind is the rule that refused it.
	Kind Kind
	// Reason says what the host or address is, e.g. "a loopback address (127.0.0.0/8)".
	Reason string
}

// Error names the URL or host and the address, says what the address is,
// and how to allow it if that is really intended.
func (e *BlockedError) Error() string {
	var b strings.Builder
	b.WriteString("netguard: refusing ")
	if e.URL != "" {
		fmt.Fprintf(&b, "%q", e.URL)
	} else {
		fmt.Fprintf(&b, "host %q", e.Host)
	}
	b.WriteString(": ")
	switch {
	case e.Kind == KindScheme || e.Kind == KindInvalid:
		b.WriteString(e.Reason)
		return b.String()
	case !e.Addr.IsValid():
		fmt.Fprintf(&b, "%s is %s", e.Host, e.Reason)
	case hostIsAddr(e.Host, e.Addr):
		fmt.Fprintf(&b, "%s is %s", e.Addr, e.Reason)
	default:
		fmt.Fprintf(&b, "%s resolves to %s, %s", e.Host, e.Addr, e.Reason)
	}
	switch e.Kind {
	case KindPrivate:
		b.WriteString("; to fetch it, allow private URLs (AllowPrivate, the CLI's allow-private-urls) or add it to the allow-list")
	case KindNumericHost:
		b.WriteString("; write the address in dotted-quad form")
	default:
		b.WriteString("; add it to the allow-list only if you really mean to fetch it")
	}
	return b.String()
}

// Is reports whether target is ErrBlocked.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

func hostIsAddr(host string, addr netip.Addr) bool {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.WithZone("").Unmap() == addr.WithZone("").Unmap()
}

// normHost lower-cases a host and drops brackets and a trailing dot.
func normHost(host string) string {
	host = strings.Trim(host, "[]")
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

func (g *Guard) nameAllowed(host string) bool {
	if g.names[host] {
		return true
	}
	for _, s := range g.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

func (g *Guard) prefixAllowed(addr netip.Addr) bool {
	addr = addr.WithZone("").Unmap()
	for _, p := range g.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// CheckAddr reports whether the guard admits a connection to addr: nil, or
// a *BlockedError saying why not.
func (g *Guard) CheckAddr(addr netip.Addr) error {
	if err := g.checkAddr(addr); err != nil {
		return err
	}
	return nil
}

func (g *Guard) checkAddr(addr netip.Addr) *BlockedError {
	if g.prefixAllowed(addr) {
		return nil
	}
	kind, reason, ok := classify(addr)
	if ok || kind == KindPrivate && g.allowPrivate {
		return nil
	}
	return &BlockedError{Host: addr.String(), Addr: addr, Kind: kind, Reason: reason}
}

// checkHost applies every rule that needs no lookup. It returns the literal
// address when host is one, and whether the host is trusted by name.
func (g *Guard) checkHost(host string) (lit netip.Addr, trusted bool, err *BlockedError) {
	h := normHost(host)
	if h == "" {
		return netip.Addr{}, false, &BlockedError{Host: host, Kind: KindInvalid, Reason: "the URL has no host"}
	}
	if g.nameAllowed(h) {
		if a, perr := netip.ParseAddr(h); perr == nil {
			return a, true, nil
		}
		return netip.Addr{}, true, nil
	}
	if a, perr := netip.ParseAddr(h); perr == nil {
		if berr := g.checkAddr(a); berr != nil {
			berr.Host = host
			return netip.Addr{}, false, berr
		}
		return a, false, nil
	}
	if why, ok := metadataNames[h]; ok {
		return netip.Addr{}, false, &BlockedError{Host: host, Kind: KindMetadata, Reason: why}
	}
	if numericHost(h) {
		return netip.Addr{}, false, &BlockedError{Host: host, Kind: KindNumericHost,
			Reason: "a numeric host in a non-canonical form (decimal, octal, hex or shortened), which resolvers read differently"}
	}
	return netip.Addr{}, false, nil
}

// numericHost reports whether every label of h is a decimal or 0x-prefixed
// hex number, as in "2130706433", "0x7f.0.0.1" or "127.1". A canonical
// dotted quad has been parsed before this is asked.
func numericHost(h string) bool {
	for _, label := range strings.Split(h, ".") {
		if label == "" {
			return false
		}
		digits := label
		if len(label) >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X') {
			digits = label[2:]
			for _, c := range digits {
				if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
					return false
				}
			}
			continue
		}
		for _, c := range digits {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// checkURLStatic applies the rules that need no lookup to u.
func (g *Guard) checkURLStatic(u *url.URL) *BlockedError {
	if u == nil {
		return &BlockedError{Kind: KindInvalid, Reason: "no URL"}
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return &BlockedError{URL: u.Redacted(), Host: u.Host, Kind: KindScheme,
			Reason: fmt.Sprintf("scheme %q is not allowed; only http and https URLs may be fetched", u.Scheme)}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return &BlockedError{URL: u.Redacted(), Host: u.Host, Kind: KindInvalid, Reason: fmt.Sprintf("invalid port %q", p)}
		}
	}
	if _, _, err := g.checkHost(u.Hostname()); err != nil {
		err.URL = u.Redacted()
		return err
	}
	return nil
}

// CheckURL checks u completely: scheme, host, and every address the host
// resolves to. Clients built by the guard check again when they dial, on
// the addresses they actually connect to; CheckURL is for callers that
// want a clear refusal before queueing work.
func (g *Guard) CheckURL(ctx context.Context, u *url.URL) error {
	if err := g.checkURLStatic(u); err != nil {
		return err
	}
	if _, err := g.resolve(ctx, u.Hostname()); err != nil {
		var be *BlockedError
		if errors.As(err, &be) {
			be.URL = u.Redacted()
		}
		return err
	}
	return nil
}

// resolve returns the addresses host may be dialled at: all of them must
// pass (one refused address refuses the host, since a name that mixes
// public and internal addresses is an attack or a misconfiguration).
func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	lit, trusted, berr := g.checkHost(host)
	if berr != nil {
		return nil, berr
	}
	if lit.IsValid() {
		return []netip.Addr{lit}, nil
	}
	h := normHost(host)
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", h)
	if err != nil {
		return nil, fmt.Errorf("netguard: resolving %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("netguard: %q resolves to no address", host)
	}
	if trusted {
		return addrs, nil
	}
	for _, a := range addrs {
		if berr := g.checkAddr(a); berr != nil {
			berr.Host = host
			return nil, berr
		}
	}
	return addrs, nil
}

// DialContext resolves address's host once, checks every address, and
// connects to a checked address itself, so a second lookup (DNS
// rebinding) cannot change the destination. It has the signature of
// http.Transport.DialContext.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("netguard: dial %q: %w", address, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("netguard: dial %q: invalid port %q", address, portStr)
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		a = a.Unmap()
		switch network {
		case "tcp4", "udp4":
			if !a.Is4() {
				continue
			}
		case "tcp6", "udp6":
			if !a.Is6() {
				continue
			}
		}
		conn, err := g.dial(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("netguard: dial %q: no %s address among %v", address, network, addrs)
	}
	return nil, errors.Join(errs...)
}

// maxIdleConns is how many idle connections a Transport keeps, in all
// and to one host.
const maxIdleConns = 4096

// CheckRedirect is an http.Client CheckRedirect function: it stops after
// the redirect limit and applies the scheme and host rules to every hop.
// The addresses of the new host are checked when it is dialled.
func (g *Guard) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > g.maxRedirects || g.maxRedirects < 0 {
		return fmt.Errorf("netguard: too many redirects (the limit is %d); stopped before %q", max(g.maxRedirects, 0), req.URL.Redacted())
	}
	if err := g.checkURLStatic(req.URL); err != nil {
		return err
	}
	return nil
}

// Transport returns a new *http.Transport that dials through the guard and
// uses no proxy: a proxy would resolve the host itself and bypass the
// address checks. It does not check schemes or redirects; use Client, or
// Wrap it, for that.
//
// It keeps up to maxIdleConns idle connections, to one host or many, so
// that the reads of a wave (the pages of many runs at once, often on a few
// big sites) reuse their connections instead of dialling again: with
// http.Transport's default of 2 per host, dialling and closing were most
// of the page reads' CPU when many runs read from one host. Idle
// connections close after 90 s.
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           maxIdleConns,
		MaxIdleConnsPerHost:    maxIdleConns,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		ResponseHeaderTimeout:  30 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

// Wrap returns a RoundTripper that applies the scheme and host rules to each
// request before passing it to next. Addresses are only checked if next
// dials through the guard (Transport, possibly wrapped by retries or
// tracing).
func (g *Guard) Wrap(next http.RoundTripper) http.RoundTripper {
	return &checking{g: g, next: next}
}

type checking struct {
	g    *Guard
	next http.RoundTripper
}

func (c *checking) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := c.g.checkURLStatic(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return c.next.RoundTrip(req)
}

// Client returns an *http.Client that fetches only what the guard admits:
// requests and redirects are checked, addresses are checked when dialled,
// and redirects stop at the limit. It has no overall timeout; bound calls
// with their context.
func (g *Guard) Client() *http.Client {
	return &http.Client{Transport: g.Wrap(g.Transport()), CheckRedirect: g.CheckRedirect}
}

// NewClient is New followed by Client.
func NewClient(cfg Config) (*http.Client, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return g.Client(), nil
}
