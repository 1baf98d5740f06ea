// Package redact makes values that may carry secrets fit to print.
package redact

import "net/url"

// URL returns raw with a password and the values of its query parameters
// (which often carry API keys) replaced by "xxxxx"; a URL that does not
// parse is "(an unparsable URL)", since it might hold anything.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"xxxxx"}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
