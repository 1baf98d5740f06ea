package search

import (
	"net/url"
	"slices"
	"strings"
)

// trackingParams are query parameters that identify a click or a campaign,
// never the resource. Names starting with "utm_" are dropped as well.
var trackingParams = map[string]bool{
	"fbclid": true, "gclid": true, "gclsrc": true, "dclid": true, "gbraid": true, "wbraid": true,
	"msclkid": true, "yclid": true, "twclid": true, "ttclid": true, "li_fat_id": true, "igshid": true,
	"mc_cid": true, "mc_eid": true, "_ga": true, "_gl": true, "_hsenc": true, "_hsmi": true,
	"mkt_tok": true, "oly_anon_id": true, "oly_enc_id": true, "vero_id": true, "vero_conv": true,
	"rb_clickid": true, "s_cid": true, "wickedid": true, "srsltid": true, "ref_src": true, "ref_url": true,
}

func isTrackingParam(name string) bool {
	name = strings.ToLower(name)
	return trackingParams[name] || strings.HasPrefix(name, "utm_")
}

// NormalizeURL returns the form of raw used to recognise the same page
// under different spellings: scheme and host lower-cased, a trailing dot
// and the default port dropped from the host, the fragment dropped, an
// empty path written "/", a trailing slash dropped from other paths,
// tracking parameters (utm_*, fbclid, gclid, srsltid, …) removed and the
// remaining query parameters sorted by name. A string that does not parse
// as an absolute URL is returned trimmed.
//
// It is a comparison key, not a URL to fetch: dropping a trailing slash or
// reordering parameters can, rarely, name a different resource.
func NormalizeURL(raw string) string {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return normalizeParsed(u, raw)
}

// normalizeParsed is NormalizeURL of raw (trimmed), which parsed as u; it
// modifies u.
func normalizeParsed(u *url.URL, raw string) string {
	if u.Scheme == "" || u.Opaque != "" {
		return raw
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	host = strings.TrimSuffix(host, ".")
	port := u.Port()
	if port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	u.RawPath = ""
	switch {
	case u.Path == "":
		u.Path = "/"
	case len(u.Path) > 1:
		u.Path = strings.TrimRight(u.Path, "/")
		if u.Path == "" {
			u.Path = "/"
		}
	}
	u.RawQuery = cleanQuery(u.RawQuery)
	u.ForceQuery = false
	return u.String()
}

// PageKey returns the key under which two URLs name the same web page:
// NormalizeURL's form, with http and https taken as one scheme (a site
// serves the same page under both). Sources gathered under different
// spellings of one page — a trailing slash, a tracking parameter, a
// fragment, http and https — share a key, and so are one source. URLs of
// other schemes are only trimmed: a file:// URL's fragment names a passage
// of the file, not a spelling.
func PageKey(raw string) string {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return raw
	}
	key := normalizeParsed(u, raw)
	if rest, ok := strings.CutPrefix(key, "http://"); ok {
		key = "https://" + rest // NormalizeURL has dropped http's default port
	}
	return key
}

// cleanQuery drops tracking and empty parameters, writes the rest in
// canonical query encoding and sorts them by name (stable, so repeated
// names keep their order).
func cleanQuery(q string) string {
	if q == "" {
		return ""
	}
	type pair struct{ name, value string }
	var kept []pair
	for _, p := range strings.Split(q, "&") {
		rawName, rawValue, hasValue := strings.Cut(p, "=")
		name := unescapeQuery(rawName)
		if name == "" || isTrackingParam(name) {
			continue
		}
		enc := url.QueryEscape(name)
		if hasValue {
			enc += "=" + url.QueryEscape(unescapeQuery(rawValue))
		}
		kept = append(kept, pair{name: url.QueryEscape(name), value: enc})
	}
	slices.SortStableFunc(kept, func(a, b pair) int { return strings.Compare(a.name, b.name) })
	parts := make([]string, len(kept))
	for i, p := range kept {
		parts[i] = p.value
	}
	return strings.Join(parts, "&")
}

// unescapeQuery decodes a query component, keeping it as is when it is not
// valid percent-encoding.
func unescapeQuery(s string) string {
	if dec, err := url.QueryUnescape(s); err == nil {
		return dec
	}
	return s
}

// Dedup returns results without repeats of the same normalised URL,
// keeping the first (best-ranked) occurrence in its place. Fields the first
// occurrence lacks (snippet, content, publication date, title) are filled
// from later ones, and the best score is kept. Results without a URL are
// kept as they are. The input is not modified.
func Dedup(results []Result) []Result { return dedupKeyed(results, nil) }

// dedupKeyed is Dedup with each result's NormalizeURL key given (keys[i]
// for results[i]) or, with keys nil, computed.
func dedupKeyed(results []Result, keys []string) []Result {
	out := make([]Result, 0, len(results))
	seen := make(map[string]int, len(results))
	for j, r := range results {
		if strings.TrimSpace(r.URL) == "" {
			out = append(out, r)
			continue
		}
		var key string
		if keys != nil {
			key = keys[j]
		} else {
			key = NormalizeURL(r.URL)
		}
		i, dup := seen[key]
		if !dup {
			seen[key] = len(out)
			out = append(out, r)
			continue
		}
		first := &out[i]
		if first.Title == "" {
			first.Title = r.Title
		}
		if first.Snippet == "" {
			first.Snippet = r.Snippet
		}
		if len(r.Content) > len(first.Content) {
			first.Content = r.Content
		}
		if first.Published.IsZero() {
			first.Published = r.Published
		}
		first.Score = max(first.Score, r.Score)
	}
	return out
}

// parseWebURL parses raw and reports whether it is an absolute http or
// https URL with a host.
func parseWebURL(raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, false
	}
	s := strings.ToLower(u.Scheme)
	return u, s == "http" || s == "https"
}

// finish is what every provider does with its raw results: drop hits that
// are not web pages, stamp the provider, deduplicate, and cut to max.
func finish(results []Result, provider string, max int) []Result {
	kept := make([]Result, 0, len(results))
	keys := make([]string, 0, len(results))
	for _, r := range results {
		r.URL = strings.TrimSpace(r.URL)
		u, ok := parseWebURL(r.URL)
		if !ok {
			continue
		}
		r.Title = strings.TrimSpace(r.Title)
		r.Snippet = strings.TrimSpace(r.Snippet)
		r.Content = strings.TrimSpace(r.Content)
		r.Provider = provider
		kept = append(kept, r)
		keys = append(keys, normalizeParsed(u, r.URL))
	}
	kept = dedupKeyed(kept, keys)
	if len(kept) > max {
		kept = kept[:max]
	}
	for i := range kept {
		if kept[i].Title == "" {
			kept[i].Title = kept[i].URL
		}
	}
	return kept
}
