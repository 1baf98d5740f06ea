package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"

	"github.com/deepgraph/deepgraph/search/netguard"
)

// staticResolver answers every lookup from a fixed table, as a DNS server
// controlled by an attacker might.
type staticResolver map[string]string

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := r[host]
	if !ok {
		return nil, fmt.Errorf("no such host %q", host)
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

func ExampleGuard_CheckURL() {
	g, err := netguard.New(netguard.Config{
		Resolver: staticResolver{
			"example.com":        "93.184.216.34",
			"innocent.example":   "10.0.0.7",
			"wiki.corp.example":  "10.0.0.8",
			"cloud-init.example": "169.254.169.254",
		},
		Allow: []string{"wiki.corp.example"},
	})
	if err != nil {
		panic(err)
	}
	for _, raw := range []string{
		"https://example.com/article",
		"http://innocent.example/",
		"http://wiki.corp.example/page",
		"http://cloud-init.example/latest/meta-data/",
		"http://127.0.0.1:8080/admin",
		"file:///etc/passwd",
	} {
		u, _ := url.Parse(raw)
		err := g.CheckURL(context.Background(), u)
		var be *netguard.BlockedError
		switch {
		case err == nil:
			fmt.Printf("%-45s allowed\n", raw)
		case errors.As(err, &be):
			fmt.Printf("%-45s refused (%s)\n", raw, be.Kind)
		default:
			fmt.Printf("%-45s error: %v\n", raw, err)
		}
	}
	// Output:
	// https://example.com/article                   allowed
	// http://innocent.example/                      refused (private)
	// http://wiki.corp.example/page                 allowed
	// http://cloud-init.example/latest/meta-data/   refused (metadata)
	// http://127.0.0.1:8080/admin                   refused (private)
	// file:///etc/passwd                            refused (scheme)
}

func ExampleBlockedError() {
	g, _ := netguard.New(netguard.Config{})
	u, _ := url.Parse("http://169.254.169.254/latest/meta-data/")
	fmt.Println(g.CheckURL(context.Background(), u))
	// Output:
	// netguard: refusing "http://169.254.169.254/latest/meta-data/": 169.254.169.254 is the cloud instance-metadata endpoint (AWS, GCP, Azure, OpenStack, DigitalOcean, …); add it to the allow-list only if you really mean to fetch it
}
