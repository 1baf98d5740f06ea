package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeResolver answers from a table and counts lookups.
type fakeResolver struct {
	mu      sync.Mutex
	table   map[string][]string
	lookups map[string]int
	// seq, when set for a host, answers successive lookups in turn.
	seq map[string][][]string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _ string, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lookups == nil {
		r.lookups = map[string]int{}
	}
	n := r.lookups[host]
	r.lookups[host]++
	answer, ok := r.table[host]
	if s, found := r.seq[host]; found {
		answer, ok = s[min(n, len(s)-1)], true
	}
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(answer))
	for i, a := range answer {
		out[i] = netip.MustParseAddr(a)
	}
	return out, nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

func newResolver() *fakeResolver {
	return &fakeResolver{table: map[string][]string{
		"public.example":   {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
		"evil.example":     {"10.0.0.5"},
		"mixed.example":    {"93.184.216.34", "127.0.0.1"},
		"localhost":        {"127.0.0.1", "::1"},
		"intranet.corp":    {"10.1.2.3"},
		"a.corp.example":   {"10.9.9.9"},
		"corp.example":     {"10.9.9.8"},
		"meta.example":     {"169.254.169.254"},
		"mapped.example":   {"::ffff:192.168.1.1"},
		"v6public.example": {"2a00:1450:4001:80b::200e"},
	}}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		addr string
		kind Kind // 0: public
	}{
		{"93.184.216.34", 0},
		{"8.8.8.8", 0},
		{"1.1.1.1", 0},
		{"2606:4700:4700::1111", 0},
		{"127.0.0.1", KindPrivate},
		{"127.255.255.254", KindPrivate},
		{"::1", KindPrivate},
		{"10.0.0.1", KindPrivate},
		{"172.16.0.1", KindPrivate},
		{"172.31.255.255", KindPrivate},
		{"172.32.0.1", 0},
		{"192.168.0.1", KindPrivate},
		{"169.254.1.1", KindPrivate},
		{"100.64.0.1", KindPrivate},
		{"100.127.255.255", KindPrivate},
		{"100.128.0.1", 0},
		{"fc00::1", KindPrivate},
		{"fd12:3456::1", KindPrivate},
		{"fe80::1", KindPrivate},
		{"fe80::1%eth0", KindPrivate},
		{"fec0::1", KindPrivate},
		{"169.254.169.254", KindMetadata},
		{"169.254.170.2", KindMetadata},
		{"100.100.100.200", KindMetadata},
		{"168.63.129.16", KindMetadata},
		{"192.0.0.192", KindMetadata},
		{"fd00:ec2::254", KindMetadata},
		{"::ffff:169.254.169.254", KindMetadata},
		{"::ffff:127.0.0.1", KindPrivate},
		{"::ffff:10.0.0.1", KindPrivate},
		{"::ffff:8.8.8.8", 0},
		{"64:ff9b::7f00:1", KindPrivate},     // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", KindMetadata}, // NAT64 of 169.254.169.254
		{"64:ff9b::808:808", 0},              // NAT64 of 8.8.8.8
		{"2002:a00:1::1", KindPrivate},       // 6to4 of 10.0.0.1
		{"2002:808:808::1", 0},               // 6to4 of 8.8.8.8
		{"::7f00:1", KindSpecial},            // IPv4-compatible
		{"0.0.0.0", KindSpecial},
		{"0.1.2.3", KindSpecial},
		{"::", KindSpecial},
		{"255.255.255.255", KindSpecial},
		{"224.0.0.1", KindSpecial},
		{"239.255.255.250", KindSpecial},
		{"ff02::1", KindSpecial},
		{"240.0.0.1", KindSpecial},
		{"192.0.2.1", KindSpecial},
		{"198.51.100.7", KindSpecial},
		{"203.0.113.9", KindSpecial},
		{"198.18.0.1", KindSpecial},
		{"192.0.0.8", KindSpecial},
		{"2001:db8::1", KindSpecial},
		{"2001::1", KindSpecial}, // Teredo
		{"3fff::1", KindSpecial},
		{"100::1", KindSpecial},
		{"4000::1", KindSpecial}, // outside 2000::/3
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			kind, reason, ok := classify(netip.MustParseAddr(tt.addr))
			if tt.kind == 0 {
				assert.True(t, ok, "%s should be public, got %v: %s", tt.addr, kind, reason)
				return
			}
			assert.False(t, ok)
			assert.Equal(t, tt.kind, kind, reason)
			assert.NotEmpty(t, reason)
		})
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		url      string
		wantKind Kind // 0: allowed
		wantErr  string
		notBlock bool // an error that is not a refusal (lookup failure)
	}{
		{name: "public name", url: "https://public.example/page"},
		{name: "public v6 name", url: "http://v6public.example/"},
		{name: "public literal", url: "http://93.184.216.34:8080/x"},
		{name: "loopback v4", url: "http://127.0.0.1/", wantKind: KindPrivate, wantErr: "127.0.0.1 is a loopback address"},
		{name: "loopback v6", url: "http://[::1]:8080/", wantKind: KindPrivate},
		{name: "v4-mapped loopback", url: "http://[::ffff:127.0.0.1]/", wantKind: KindPrivate},
		{name: "AWS metadata", url: "http://169.254.169.254/latest/meta-data/", wantKind: KindMetadata, wantErr: "instance-metadata"},
		{name: "v4-mapped metadata", url: "http://[::ffff:a9fe:a9fe]/", wantKind: KindMetadata},
		{name: "AWS IPv6 metadata", url: "http://[fd00:ec2::254]/", wantKind: KindMetadata},
		{name: "Alibaba metadata in CGNAT", url: "http://100.100.100.200/latest/meta-data", wantKind: KindMetadata, wantErr: "Alibaba"},
		{name: "GCP metadata name", url: "http://metadata.google.internal/computeMetadata/v1/", wantKind: KindMetadata},
		{name: "metadata name in caps with a dot", url: "http://METADATA.GOOGLE.INTERNAL./", wantKind: KindMetadata},
		{name: "name resolving to metadata", url: "http://meta.example/", wantKind: KindMetadata, wantErr: "meta.example resolves to 169.254.169.254"},
		{name: "public-looking name resolving private", url: "http://evil.example/", wantKind: KindPrivate, wantErr: "evil.example resolves to 10.0.0.5, a private address"},
		{name: "name resolving to v4-mapped private", url: "http://mapped.example/", wantKind: KindPrivate},
		{name: "one private address among public ones", url: "http://mixed.example/", wantKind: KindPrivate},
		{name: "localhost", url: "http://localhost:3000/", wantKind: KindPrivate},
		{name: "decimal host", url: "http://2130706433/", wantKind: KindNumericHost},
		{name: "hex host", url: "http://0x7f.0.0.1/", wantKind: KindNumericHost},
		{name: "short host", url: "http://127.1/", wantKind: KindNumericHost},
		{name: "octal host", url: "http://0177.0.0.1/", wantKind: KindNumericHost},
		{name: "unspecified", url: "http://0.0.0.0:8080/", wantKind: KindSpecial},
		{name: "broadcast", url: "http://255.255.255.255/", wantKind: KindSpecial},
		{name: "multicast", url: "http://224.0.0.251/", wantKind: KindSpecial},
		{name: "documentation", url: "http://192.0.2.10/", wantKind: KindSpecial},
		{name: "NAT64 of loopback", url: "http://[64:ff9b::7f00:1]/", wantKind: KindPrivate, wantErr: "NAT64 address embedding 127.0.0.1"},
		{name: "6to4 of private", url: "http://[2002:a00:1::1]/", wantKind: KindPrivate},
		{name: "link-local v6 with zone", url: "http://[fe80::1%25eth0]/", wantKind: KindPrivate},
		{name: "ftp scheme", url: "ftp://public.example/file", wantKind: KindScheme, wantErr: `scheme "ftp" is not allowed`},
		{name: "file scheme", url: "file:///etc/passwd", wantKind: KindScheme},
		{name: "gopher scheme", url: "gopher://127.0.0.1:6379/_INFO", wantKind: KindScheme},
		{name: "no host", url: "http:///path", wantKind: KindInvalid},
		{name: "bad port", url: "http://public.example:99999/", wantKind: KindInvalid},
		{name: "unknown name", url: "http://nowhere.example/", notBlock: true, wantErr: "no such host"},

		{name: "AllowPrivate admits loopback", cfg: Config{AllowPrivate: true}, url: "http://127.0.0.1:8080/"},
		{name: "AllowPrivate admits a private name", cfg: Config{AllowPrivate: true}, url: "http://evil.example/"},
		{name: "AllowPrivate admits CGNAT", cfg: Config{AllowPrivate: true}, url: "http://100.64.1.1/"},
		{name: "AllowPrivate still refuses metadata", cfg: Config{AllowPrivate: true}, url: "http://169.254.169.254/", wantKind: KindMetadata},
		{name: "AllowPrivate still refuses Alibaba metadata", cfg: Config{AllowPrivate: true}, url: "http://100.100.100.200/", wantKind: KindMetadata},
		{name: "AllowPrivate still refuses metadata names", cfg: Config{AllowPrivate: true}, url: "http://metadata.google.internal/", wantKind: KindMetadata},
		{name: "AllowPrivate still refuses unspecified", cfg: Config{AllowPrivate: true}, url: "http://0.0.0.0/", wantKind: KindSpecial},
		{name: "allow-listed address", cfg: Config{Allow: []string{"127.0.0.1"}}, url: "http://127.0.0.1:9000/"},
		{name: "allow-listed address admits its mapped form", cfg: Config{Allow: []string{"127.0.0.1"}}, url: "http://[::ffff:127.0.0.1]/"},
		{name: "allow-listed address is not a wildcard", cfg: Config{Allow: []string{"127.0.0.1"}}, url: "http://127.0.0.2/", wantKind: KindPrivate},
		{name: "allow-listed CIDR", cfg: Config{Allow: []string{"10.0.0.0/8"}}, url: "http://evil.example/"},
		{name: "allow-listed v6 loopback", cfg: Config{Allow: []string{"::1"}}, url: "http://[::1]/"},
		{name: "allow-listed name", cfg: Config{Allow: []string{"intranet.corp"}}, url: "http://intranet.corp/wiki"},
		{name: "allow-listed name is exact", cfg: Config{Allow: []string{"intranet.corp"}}, url: "http://evil.example/", wantKind: KindPrivate},
		{name: "wildcard admits subdomains", cfg: Config{Allow: []string{"*.corp.example"}}, url: "http://a.corp.example/"},
		{name: "wildcard does not admit the apex", cfg: Config{Allow: []string{"*.corp.example"}}, url: "http://corp.example/", wantKind: KindPrivate},
		{name: "explicit metadata allow", cfg: Config{Allow: []string{"169.254.169.254/32"}}, url: "http://169.254.169.254/"},
		{name: "explicit metadata name allow", cfg: Config{Allow: []string{"metadata.google.internal"}, Resolver: &fakeResolver{table: map[string][]string{"metadata.google.internal": {"169.254.169.254"}}}}, url: "http://metadata.google.internal/"},
		{name: "allow-list never admits other schemes", cfg: Config{Allow: []string{"public.example"}}, url: "ftp://public.example/", wantKind: KindScheme},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.Resolver == nil {
				tt.cfg.Resolver = newResolver()
			}
			g, err := New(tt.cfg)
			require.NoError(t, err)
			u, err := url.Parse(tt.url)
			require.NoError(t, err)
			err = g.CheckURL(context.Background(), u)
			if tt.wantKind == 0 && !tt.notBlock {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tt.wantErr != "" {
				assert.Contains(t, err.Error(), tt.wantErr)
			}
			if tt.notBlock {
				assert.NotErrorIs(t, err, ErrBlocked)
				return
			}
			assert.ErrorIs(t, err, ErrBlocked)
			var be *BlockedError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, tt.wantKind, be.Kind, err.Error())
			assert.Equal(t, u.Redacted(), be.URL)
			assert.Contains(t, err.Error(), u.Redacted(), "the error names the URL")
		})
	}
}

func TestBlockedErrorHints(t *testing.T) {
	tests := []struct {
		err  *BlockedError
		want []string
	}{
		{err: &BlockedError{Host: "evil.example", Addr: netip.MustParseAddr("10.0.0.5"), Kind: KindPrivate, Reason: "a private address (RFC 1918, 10.0.0.0/8)"},
			want: []string{`refusing host "evil.example"`, "evil.example resolves to 10.0.0.5, a private address", "allow-private-urls", "allow-list"}},
		{err: &BlockedError{URL: "http://169.254.169.254/", Host: "169.254.169.254", Addr: netip.MustParseAddr("169.254.169.254"), Kind: KindMetadata, Reason: "the cloud instance-metadata endpoint"},
			want: []string{`refusing "http://169.254.169.254/"`, "169.254.169.254 is the cloud instance-metadata endpoint", "allow-list only if you really mean"}},
		{err: &BlockedError{Host: "2130706433", Kind: KindNumericHost, Reason: "a numeric host"},
			want: []string{"2130706433 is a numeric host", "dotted-quad"}},
	}
	for _, tt := range tests {
		msg := tt.err.Error()
		for _, w := range tt.want {
			assert.Contains(t, msg, w)
		}
		assert.ErrorIs(t, tt.err, ErrBlocked)
	}
	assert.NotContains(t, (&BlockedError{Kind: KindMetadata, Host: "x", Reason: "y"}).Error(), "allow-private-urls",
		"AllowPrivate does not help for metadata, so it is not suggested")
}

func TestNewRejectsBadAllowEntries(t *testing.T) {
	for _, entry := range []string{"", "  ", "10.0.0.0/33", "10.0.0.1:80", "*.", "*", "bad name.example", "http://x.example", "::1/129"} {
		t.Run(entry, func(t *testing.T) {
			_, err := New(Config{Allow: []string{entry}})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "allow-list entry")
		})
	}
	g, err := New(Config{Allow: []string{" Wiki.Corp.Example. ", "[::1]", "::ffff:10.0.0.0/104", "*.Intra.Example"}})
	require.NoError(t, err)
	assert.True(t, g.nameAllowed("wiki.corp.example"))
	assert.True(t, g.nameAllowed("x.intra.example"))
	assert.True(t, g.prefixAllowed(netip.MustParseAddr("::1")))
	assert.True(t, g.prefixAllowed(netip.MustParseAddr("10.200.0.1")), "mapped prefixes are unmapped")
}

// recordingDial replaces the network dial: it records the address and fails,
// so no test touches a real network.
type recordingDial struct {
	mu    sync.Mutex
	addrs []string
}

var errNoNetwork = errors.New("test: no network")

func (d *recordingDial) dial(_ context.Context, _ string, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = append(d.addrs, address)
	return nil, errNoNetwork
}

func TestDialConnectsToTheCheckedAddress(t *testing.T) {
	// The first answer is public, a second lookup would say loopback: the
	// guard must resolve once and dial exactly what it checked.
	r := &fakeResolver{seq: map[string][][]string{"rebind.example": {{"93.184.216.34"}, {"127.0.0.1"}}}}
	g, err := New(Config{Resolver: r})
	require.NoError(t, err)
	var d recordingDial
	g.dial = d.dial
	_, err = g.DialContext(context.Background(), "tcp", "rebind.example:443")
	require.ErrorIs(t, err, errNoNetwork)
	assert.Equal(t, []string{"93.184.216.34:443"}, d.addrs)
	assert.Equal(t, 1, r.count("rebind.example"))

	// The next connection resolves afresh and is refused on the new answer.
	_, err = g.DialContext(context.Background(), "tcp", "rebind.example:443")
	require.ErrorIs(t, err, ErrBlocked)
	assert.Len(t, d.addrs, 1, "a refused address is never dialled")
}

func TestDialTriesEveryAddressOfTheFamily(t *testing.T) {
	g, err := New(Config{Resolver: newResolver()})
	require.NoError(t, err)
	tests := []struct {
		network string
		want    []string
	}{
		{"tcp", []string{"93.184.216.34:80", "[2606:2800:220:1:248:1893:25c8:1946]:80"}},
		{"tcp4", []string{"93.184.216.34:80"}},
		{"tcp6", []string{"[2606:2800:220:1:248:1893:25c8:1946]:80"}},
	}
	for _, tt := range tests {
		t.Run(tt.network, func(t *testing.T) {
			var d recordingDial
			g.dial = d.dial
			_, err := g.DialContext(context.Background(), tt.network, "public.example:80")
			require.ErrorIs(t, err, errNoNetwork)
			assert.Equal(t, tt.want, d.addrs)
		})
	}
	_, err = g.DialContext(context.Background(), "tcp", "public.example")
	assert.ErrorContains(t, err, "missing port")
}

func TestClientAgainstLocalServer(t *testing.T) {
	var secretHits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello") })
	mux.HandleFunc("/secret", func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		_, _ = io.WriteString(w, "internal data")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	mux.HandleFunc("/to-private", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://private.test:%d/secret", port), http.StatusFound)
	})
	mux.HandleFunc("/to-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/", http.StatusFound)
	})
	mux.HandleFunc("/to-file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/to-ok", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusMovedPermanently)
	})
	var loops atomic.Int32
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		loops.Add(1)
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	resolver := &fakeResolver{table: map[string][]string{
		"allowed.test":   {"127.0.0.1"},
		"private.test":   {"127.0.0.1"},
		"public.example": {"127.0.0.1"}, // a public-looking name pointing inside
	}}
	at := func(host, path string) string { return fmt.Sprintf("http://%s:%d%s", host, port, path) }

	tests := []struct {
		name     string
		cfg      Config
		url      string
		want     string // body on success
		wantKind Kind
	}{
		{name: "default refuses the loopback server", url: srv.URL + "/ok", wantKind: KindPrivate},
		{name: "allow-listed address reaches it", cfg: Config{Allow: []string{"127.0.0.1"}}, url: srv.URL + "/ok", want: "hello"},
		{name: "AllowPrivate reaches it", cfg: Config{AllowPrivate: true}, url: srv.URL + "/ok", want: "hello"},
		{name: "public-looking name resolving to loopback", url: at("public.example", "/ok"), wantKind: KindPrivate},
		{name: "allowed host redirecting to a private host", cfg: Config{Allow: []string{"allowed.test"}}, url: at("allowed.test", "/to-private"), wantKind: KindPrivate},
		{name: "redirect to metadata", cfg: Config{Allow: []string{"allowed.test"}}, url: at("allowed.test", "/to-metadata"), wantKind: KindMetadata},
		{name: "redirect to file:", cfg: Config{Allow: []string{"allowed.test"}}, url: at("allowed.test", "/to-file"), wantKind: KindScheme},
		{name: "allowed redirect", cfg: Config{Allow: []string{"allowed.test"}}, url: at("allowed.test", "/to-ok"), want: "hello"},
		{name: "scheme checked on the first request", cfg: Config{AllowPrivate: true}, url: "gopher://127.0.0.1:70/", wantKind: KindScheme},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Resolver = resolver
			client, err := NewClient(tt.cfg)
			require.NoError(t, err)
			before := secretHits.Load()
			resp, err := client.Get(tt.url)
			assert.Equal(t, before, secretHits.Load(), "the private endpoint must never be reached")
			if tt.wantKind != 0 {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrBlocked)
				var be *BlockedError
				require.ErrorAs(t, err, &be)
				assert.Equal(t, tt.wantKind, be.Kind, err.Error())
				return
			}
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(body))
		})
	}

	t.Run("redirect limit", func(t *testing.T) {
		client, err := NewClient(Config{Allow: []string{"127.0.0.1"}, MaxRedirects: 3})
		require.NoError(t, err)
		_, err = client.Get(srv.URL + "/loop")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "too many redirects (the limit is 3)")
		assert.Equal(t, int32(4), loops.Load(), "the first request and three redirects")
	})
	t.Run("no redirects", func(t *testing.T) {
		client, err := NewClient(Config{Allow: []string{"127.0.0.1"}, MaxRedirects: -1})
		require.NoError(t, err)
		_, err = client.Get(srv.URL + "/to-ok")
		assert.ErrorContains(t, err, "too many redirects (the limit is 0)")
	})
	t.Run("proxy settings are ignored", func(t *testing.T) {
		t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
		t.Setenv("http_proxy", "http://127.0.0.1:1")
		g, err := New(Config{Allow: []string{"127.0.0.1"}})
		require.NoError(t, err)
		assert.Nil(t, g.Transport().Proxy)
		resp, err := g.Client().Get(srv.URL + "/ok")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

func TestWrapClosesTheBodyOfARefusedRequest(t *testing.T) {
	g, err := New(Config{})
	require.NoError(t, err)
	body := &closeRecorder{Reader: strings.NewReader("x")}
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", body)
	require.NoError(t, err)
	_, err = g.Wrap(http.DefaultTransport).RoundTrip(req)
	require.ErrorIs(t, err, ErrBlocked)
	assert.True(t, body.closed)
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::ffff:127.0.0.1", "2130706433", "0x7f.1", "example.com", "[::1]", "METADATA.google.internal.", "fe80::1%eth0", "64:ff9b::a00:1", ""} {
		f.Add(s)
	}
	g, err := New(Config{Resolver: newResolver()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string) {
		_, _, berr := g.checkHost(host)
		a, perr := netip.ParseAddr(normHost(host))
		if perr != nil {
			return
		}
		// An address and its IPv4-mapped form must get the same verdict.
		if a.Is4() {
			_, _, mapped := g.checkHost(netip.AddrFrom16(a.As16()).String())
			if (berr == nil) != (mapped == nil) {
				t.Fatalf("%s and its mapped form disagree: %v vs %v", a, berr, mapped)
			}
		}
	})
}
