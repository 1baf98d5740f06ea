// Package netguard keeps URL fetching away from internal networks (SSRF
// protection). Every tool that fetches a URL a model or a web page chose —
// the page reader, later any fetch tool — goes through it.
//
// # The model
//
// A fetched page can tell an agent to fetch an internal URL; the guard makes
// sure that ends in a clear refusal, not a request to the cloud-metadata
// service. A Guard admits a destination only if
//
//   - the scheme is http or https;
//   - the host is not a cloud-metadata name (metadata.google.internal, …) nor
//     a number in a non-canonical form ("2130706433", "0x7f.1", "127.1");
//   - every address the host resolves to is public unicast: not loopback,
//     private (RFC 1918, fc00::/7), link-local (169.254/16, fe80::/10),
//     CGNAT (100.64/10, which holds Alibaba's 100.100.100.200), multicast,
//     broadcast, unspecified, reserved, documentation or benchmarking, nor a
//     cloud-metadata address (169.254.169.254, fd00:ec2::254, 168.63.129.16,
//     …). IPv4-mapped, NAT64 and 6to4 IPv6 addresses are judged by the IPv4
//     address they carry.
//
// The check happens where it cannot be raced: the guard's DialContext
// resolves the host once, checks every address, and connects to a checked
// address itself, so a DNS answer that changes between check and connect
// (rebinding) changes nothing. Redirects are checked hop by hop
// (CheckRedirect) and limited. Guarded transports use no proxy, since a
// proxy would resolve the host again on its own.
//
// Two switches open the guard for self-hosted setups, both off by default:
// Config.AllowPrivate admits the private ranges (but still not metadata
// endpoints or special ranges), and Config.Allow lists CIDRs, addresses, host
// names or "*.domain" wildcards that are admitted whatever they are.
//
// Refusals are *BlockedError values (matching ErrBlocked) that name the host
// and the address, say what the address is, and how to allow it.
//
// # Example
//
//	g, err := netguard.New(netguard.Config{Allow: []string{"wiki.corp.example"}})
//	if err != nil { … }
//	client := g.Client()
//	resp, err := client.Get(u) // errors.Is(err, netguard.ErrBlocked) on refusal
package netguard
