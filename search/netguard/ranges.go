package netguard

import (
	"fmt"
	"net/netip"
)

// Kind says which rule refused a destination. It tells a caller which switch
// would allow it.
type Kind int

// The kinds of refusal.
const (
	// KindScheme: the URL's scheme is not http or https. Nothing allows it.
	KindScheme Kind = iota + 1
	// KindPrivate: a loopback, private (RFC 1918, unique local), link-local
	// or CGNAT address. Config.AllowPrivate or an Allow entry permits it.
	KindPrivate
	// KindSpecial: an address that is never a web server: unspecified,
	// multicast, broadcast, reserved, documentation or benchmarking ranges.
	// Only an explicit Allow entry permits it.
	KindSpecial
	// KindMetadata: a cloud instance-metadata endpoint, by address or by
	// name. AllowPrivate does not permit it; only an explicit Allow entry does.
	KindMetadata
	// KindNumericHost: a host written as a non-canonical number such as
	// "2130706433", "0x7f.1" or "127.1", which resolvers disagree about.
	// Write the address in dotted-quad form instead.
	KindNumericHost
	// KindInvalid: the URL has no host, or its host or port cannot be parsed.
	KindInvalid
)

// String returns the kind's short name ("private", "metadata", …).
func (k Kind) String() string {
	switch k {
	case KindScheme:
		return "scheme"
	case KindPrivate:
		return "private"
	case KindSpecial:
		return "special"
	case KindMetadata:
		return "metadata"
	case KindNumericHost:
		return "numeric-host"
	case KindInvalid:
		return "invalid"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

type rule struct {
	prefix netip.Prefix
	kind   Kind
	reason string
}

func mustRules(specs ...spec) []rule {
	out := make([]rule, len(specs))
	for i, s := range specs {
		out[i] = rule{prefix: netip.MustParsePrefix(s.cidr), kind: s.kind, reason: s.reason}
	}
	return out
}

type spec struct {
	cidr   string
	kind   Kind
	reason string
}

// metadataRules are cloud instance-metadata endpoints. They are checked
// before everything else, so that AllowPrivate (which admits the link-local
// and CGNAT ranges most of them live in) still refuses them.
var metadataRules = mustRules(
	spec{"169.254.169.254/32", KindMetadata, "the cloud instance-metadata endpoint (AWS, GCP, Azure, OpenStack, DigitalOcean, …)"},
	spec{"169.254.170.2/32", KindMetadata, "the AWS ECS task-metadata endpoint"},
	spec{"169.254.170.23/32", KindMetadata, "the AWS EKS pod-identity endpoint"},
	spec{"169.254.0.23/32", KindMetadata, "the Tencent Cloud metadata endpoint"},
	spec{"100.100.100.200/32", KindMetadata, "the Alibaba Cloud metadata endpoint"},
	spec{"168.63.129.16/32", KindMetadata, "the Azure WireServer endpoint"},
	spec{"192.0.0.192/32", KindMetadata, "the Oracle Cloud metadata endpoint"},
	spec{"fd00:ec2::254/128", KindMetadata, "the AWS instance-metadata endpoint (IPv6)"},
	spec{"fd00:ec2::23/128", KindMetadata, "the AWS EKS pod-identity endpoint (IPv6)"},
)

// v4Rules covers every IPv4 range that is not globally reachable unicast
// (IANA special-purpose registry), most specific first where they nest.
var v4Rules = mustRules(
	spec{"255.255.255.255/32", KindSpecial, "the broadcast address"},
	spec{"0.0.0.0/8", KindSpecial, `the "this network" range (0.0.0.0/8), which reaches the local host`},
	spec{"10.0.0.0/8", KindPrivate, "a private address (RFC 1918, 10.0.0.0/8)"},
	spec{"100.64.0.0/10", KindPrivate, "a carrier-grade NAT address (100.64.0.0/10)"},
	spec{"127.0.0.0/8", KindPrivate, "a loopback address (127.0.0.0/8)"},
	spec{"169.254.0.0/16", KindPrivate, "a link-local address (169.254.0.0/16)"},
	spec{"172.16.0.0/12", KindPrivate, "a private address (RFC 1918, 172.16.0.0/12)"},
	spec{"192.0.0.0/24", KindSpecial, "an IETF protocol-assignment address (192.0.0.0/24)"},
	spec{"192.0.2.0/24", KindSpecial, "a documentation address (192.0.2.0/24)"},
	spec{"192.88.99.0/24", KindSpecial, "a deprecated 6to4 relay address (192.88.99.0/24)"},
	spec{"192.168.0.0/16", KindPrivate, "a private address (RFC 1918, 192.168.0.0/16)"},
	spec{"198.18.0.0/15", KindSpecial, "a benchmarking address (198.18.0.0/15)"},
	spec{"198.51.100.0/24", KindSpecial, "a documentation address (198.51.100.0/24)"},
	spec{"203.0.113.0/24", KindSpecial, "a documentation address (203.0.113.0/24)"},
	spec{"224.0.0.0/4", KindSpecial, "a multicast address (224.0.0.0/4)"},
	spec{"240.0.0.0/4", KindSpecial, "a reserved address (240.0.0.0/4)"},
)

// v6Rules covers the IPv6 ranges with a more telling reason than "outside
// global unicast"; anything else outside 2000::/3 is refused too.
var v6Rules = mustRules(
	spec{"::/128", KindSpecial, "the unspecified address (::)"},
	spec{"::1/128", KindPrivate, "the loopback address (::1)"},
	spec{"::/96", KindSpecial, "a deprecated IPv4-compatible address (::/96)"},
	spec{"64:ff9b:1::/48", KindPrivate, "a local-use NAT64 address (64:ff9b:1::/48)"},
	spec{"100::/64", KindSpecial, "a discard-only address (100::/64)"},
	spec{"2001:db8::/32", KindSpecial, "a documentation address (2001:db8::/32)"},
	spec{"2001::/23", KindSpecial, "an IETF protocol-assignment address (2001::/23: Teredo, benchmarking, ORCHID)"},
	spec{"3fff::/20", KindSpecial, "a documentation address (3fff::/20)"},
	spec{"fc00::/7", KindPrivate, "a unique local address (fc00::/7)"},
	spec{"fe80::/10", KindPrivate, "a link-local address (fe80::/10)"},
	spec{"fec0::/10", KindPrivate, "a deprecated site-local address (fec0::/10)"},
	spec{"ff00::/8", KindSpecial, "a multicast address (ff00::/8)"},
)

var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

// classify reports why addr is not a public unicast address, or ok=true
// when it is one. IPv4-mapped, NAT64 and 6to4 addresses are judged by the
// IPv4 address they carry.
func classify(addr netip.Addr) (kind Kind, reason string, ok bool) {
	addr = addr.WithZone("").Unmap()
	for _, r := range metadataRules {
		if r.prefix.Contains(addr) {
			return r.kind, r.reason, false
		}
	}
	if addr.Is4() {
		for _, r := range v4Rules {
			if r.prefix.Contains(addr) {
				return r.kind, r.reason, false
			}
		}
		return 0, "", true
	}
	if embedded, how, found := embeddedV4(addr); found {
		if k, why, ok := classify(embedded); !ok {
			return k, fmt.Sprintf("%s address embedding %s, %s", how, embedded, why), false
		}
		return 0, "", true
	}
	for _, r := range v6Rules {
		if r.prefix.Contains(addr) {
			return r.kind, r.reason, false
		}
	}
	if !globalUnicast6.Contains(addr) {
		return KindSpecial, "a reserved IPv6 address (outside global unicast 2000::/3)", false
	}
	return 0, "", true
}

// embeddedV4 extracts the IPv4 address carried by a NAT64 (64:ff9b::/96)
// or 6to4 (2002::/16) address.
func embeddedV4(addr netip.Addr) (netip.Addr, string, bool) {
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "a NAT64", true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "a 6to4", true
	}
	return netip.Addr{}, "", false
}

// metadataNames are host names of instance-metadata services. Most resolve
// to an address metadataRules already refuses; refusing the name as well
// gives a clear error without a lookup and covers providers whose metadata
// service has a public address.
var metadataNames = map[string]string{
	"metadata":                     "the GCP metadata server",
	"metadata.google.internal":     "the GCP metadata server",
	"metadata.goog":                "the GCP metadata server",
	"instance-data":                "the AWS instance-metadata service",
	"instance-data.ec2.internal":   "the AWS instance-metadata service",
	"metadata.tencentyun.com":      "the Tencent Cloud metadata service",
	"metadata.platformequinix.com": "the Equinix Metal metadata service",
	"metadata.packet.net":          "the Equinix Metal (Packet) metadata service",
}
