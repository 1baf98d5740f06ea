package mcp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/internal/redact"
)

// DefaultTimeout bounds one call of a server whose Timeout is zero.
const DefaultTimeout = 60 * time.Second

// MaxNameLen is the longest server name: the name prefixes every tool name,
// and tool names have at most 64 characters.
const MaxNameLen = 32

// Server says how to reach one MCP server: a command speaking MCP over its
// stdin and stdout (Command, Args, Env, Dir), or a streamable-HTTP endpoint
// (URL, Headers). Exactly one of Command and URL is set.
//
// Env values and Headers are treated as secrets: a Server prints (with fmt
// and slog) without them, and errors never show them.
type Server struct {
	// Name identifies the server and prefixes its tools' names
	// ("name.tool"): 1 to MaxNameLen letters, digits, '_' or '-'.
	Name string
	// Command is the program of a stdio server (looked up in PATH), Args its
	// arguments, Dir its working directory ("" for the current one).
	Command string
	Args    []string
	Dir     string
	// Env adds variables to the server's environment. The server does not
	// inherit the whole environment of this process — only the variables a
	// program needs to run (PATH, HOME, locale, temporary directory,
	// proxies, npm's settings; see the package documentation) — so API keys
	// set for this program do not reach it unless given here.
	Env map[string]string
	// URL is the endpoint of a streamable-HTTP server (http or https);
	// Headers are sent with every request to it (and only to its host, not
	// after a redirect elsewhere).
	URL     string
	Headers map[string]string
	// Timeout bounds one call (and a connection's start); 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

var validServerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`) })

// ErrInvalidServer matches the errors of Validate.
var ErrInvalidServer = errors.New("mcp: invalid server")

// Validate reports what is wrong with s, naming the field and what to
// write. It never shows an Env value or a header.
func (s Server) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w %s: %s", ErrInvalidServer, quoteName(s.Name), fmt.Sprintf(format, args...)))
	}
	if !validServerName().MatchString(s.Name) {
		bad("name: use 1 to %d letters, digits, '_' or '-' (the name prefixes its tools' names)", MaxNameLen)
	}
	switch {
	case s.Command == "" && s.URL == "":
		bad("set command (a program speaking MCP on stdin/stdout) or url (a streamable-HTTP endpoint)")
	case s.Command != "" && s.URL != "":
		bad("set command or url, not both")
	case s.URL != "":
		if err := checkURL(s.URL); err != nil {
			bad("url: %v", err)
		}
		if len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "" {
			bad("args, env and dir belong to a command; a url server takes headers")
		}
		for k, v := range s.Headers {
			if k == "" || strings.ContainsAny(k, " \t\r\n:") {
				bad("headers: %q is not a header name", k)
			}
			if strings.ContainsAny(v, "\r\n") {
				bad("headers: the value of %s holds a line break", k)
			}
		}
	default:
		if len(s.Headers) > 0 {
			bad("headers belong to a url server; a command takes env")
		}
		for k := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				bad("env: %q is not a variable name", k)
			}
		}
	}
	if s.Timeout < 0 {
		bad("timeout: use a positive duration such as 60s, or 0 for the default")
	}
	return errors.Join(errs...)
}

func quoteName(name string) string {
	if name == "" {
		return "(no name)"
	}
	return fmt.Sprintf("%q", name)
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("use an http or https URL such as https://mcp.example.com/mcp")
	}
	if u.User != nil {
		return errors.New("put credentials in headers, not in the URL")
	}
	return nil
}

func (s Server) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

// String describes s without its secrets: "files (stdio: npx -y pkg /dir;
// env TOKEN)" or "search (http: https://host/mcp; headers Authorization)".
func (s Server) String() string {
	var b strings.Builder
	b.WriteString(s.Name)
	if s.URL != "" {
		fmt.Fprintf(&b, " (http: %s", redact.URL(s.URL))
		if len(s.Headers) > 0 {
			fmt.Fprintf(&b, "; headers %s", strings.Join(sortedKeys(s.Headers), ", "))
		}
	} else {
		b.WriteString(" (stdio: ")
		b.WriteString(s.commandLine())
		if len(s.Env) > 0 {
			fmt.Fprintf(&b, "; env %s", strings.Join(sortedKeys(s.Env), ", "))
		}
		if s.Dir != "" {
			fmt.Fprintf(&b, "; dir %s", s.Dir)
		}
	}
	if s.Timeout > 0 {
		fmt.Fprintf(&b, "; timeout %s", s.Timeout)
	}
	b.WriteString(")")
	return b.String()
}

// GoString is String, so %#v does not show the secrets either.
func (s Server) GoString() string { return "mcp.Server(" + s.String() + ")" }

// LogValue implements slog.LogValuer without the secrets.
func (s Server) LogValue() slog.Value { return slog.StringValue(s.String()) }

func (s Server) commandLine() string {
	parts := append([]string{s.Command}, s.Args...)
	for i, p := range parts {
		if p == "" || strings.ContainsAny(p, " \t\"'") {
			parts[i] = fmt.Sprintf("%q", p)
		}
	}
	return strings.Join(parts, " ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// secrets lists what errors and logs must never show: env values, header
// values (and the token of "Bearer <token>"), the URL's query values and
// password. Values shorter than 6 bytes are left out: hiding every "1" of a
// message would garble it, and so short a value is no credential.
func (s Server) secrets() []string {
	var out []string
	add := func(v string) {
		if len(v) >= 6 && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, v := range s.Env {
		add(v)
	}
	for _, v := range s.Headers {
		add(v)
		if f := strings.Fields(v); len(f) > 1 {
			add(f[len(f)-1])
		}
	}
	if u, err := url.Parse(s.URL); err == nil && s.URL != "" {
		if u.User != nil {
			pw, _ := u.User.Password()
			add(pw)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
		if u.RawQuery != "" {
			add(s.URL)
			add(u.RawQuery)
		}
	}
	// Longest first, so a value containing another is hidden whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
