package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/internal/redact"
)

// MCPServer is one entry of mcp_servers: an MCP server whose tools agents
// may use, reached by running Command (stdio) or at URL (streamable HTTP).
//
// Env values and Headers are Secrets: they print as "[redacted]", and
// research config shows only their names. They may refer to environment
// variables as ${NAME}, replaced by Expand when the server is started, so
// the file need not hold the secret itself.
type MCPServer struct {
	// Name identifies the server and prefixes its tools' names.
	Name string
	// Command, Args, Env and Dir run a stdio server.
	Command string
	Args    []string
	Env     map[string]Secret
	Dir     string
	// URL and Headers reach a streamable-HTTP server.
	URL     string
	Headers map[string]Secret
	// Timeout bounds one call; DefaultMCPTimeout unless set.
	Timeout time.Duration
	// AdHoc says the server was given on the command line (--mcp
	// NAME=COMMAND…), not in mcp_servers.
	AdHoc bool
}

// DefaultMCPTimeout bounds one call of an MCP server whose entry sets no
// timeout.
const DefaultMCPTimeout = 60 * time.Second

// MaxMCPTimeout is the longest timeout an MCP server entry may set.
const MaxMCPTimeout = 24 * time.Hour

// Values of agent.mcp with a special meaning.
const (
	// MCPNone selects no MCP server.
	MCPNone = "none"
)

var (
	mcpNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`) })
	envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	// headerNameRe is an HTTP token.
	headerNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") })
	// refRe is a ${NAME} reference in an env value or a header.
	refRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([^}]*)\}`) })
)

const mcpNameRule = "1 to 32 letters, digits, '_' or '-'"

// String describes the server without its secrets: "files (stdio: npx -y
// pkg /dir; env TOKEN)" or "search (http: https://host/mcp; headers
// Authorization; timeout 2m)".
func (s MCPServer) String() string {
	var b strings.Builder
	b.WriteString(s.Name)
	if s.URL != "" {
		fmt.Fprintf(&b, " (http: %s", redact.URL(s.URL))
		if len(s.Headers) > 0 {
			fmt.Fprintf(&b, "; headers %s", strings.Join(secretKeys(s.Headers), ", "))
		}
	} else {
		b.WriteString(" (stdio: ")
		parts := append([]string{s.Command}, s.Args...)
		for i, p := range parts {
			if p == "" || strings.ContainsAny(p, " \t\"'") {
				parts[i] = fmt.Sprintf("%q", p)
			}
		}
		b.WriteString(strings.Join(parts, " "))
		if len(s.Env) > 0 {
			fmt.Fprintf(&b, "; env %s", strings.Join(secretKeys(s.Env), ", "))
		}
		if s.Dir != "" {
			fmt.Fprintf(&b, "; dir %s", s.Dir)
		}
	}
	if s.Timeout != DefaultMCPTimeout && s.Timeout != 0 {
		fmt.Fprintf(&b, "; timeout %s", fmtDur(s.Timeout))
	}
	b.WriteString(")")
	return b.String()
}

// GoString is String, so %#v shows no secret either.
func (s MCPServer) GoString() string { return "config.MCPServer(" + s.String() + ")" }

// Expand returns s with the ${NAME} references of its env values and
// headers replaced by the variables' values, looked up with lookup
// (os.LookupEnv). A variable that is not set, or empty, is an error naming
// the server, the field and the variable — never a value.
func (s MCPServer) Expand(lookup func(string) (string, bool)) (MCPServer, error) {
	var errs []error
	expand := func(field string, m map[string]Secret) map[string]Secret {
		if m == nil {
			return nil
		}
		out := make(map[string]Secret, len(m))
		for _, k := range secretKeys(m) {
			v := m[k].Reveal()
			v = refRe().ReplaceAllStringFunc(v, func(ref string) string {
				name := ref[2 : len(ref)-1]
				val, ok := lookup(name)
				if !ok || val == "" {
					errs = append(errs, fmt.Errorf("MCP server %s: %s.%s refers to ${%s}, which is not set: set the variable, or write the value in the config file", s.Name, field, k, name))
				}
				return val
			})
			out[k] = Secret(v)
		}
		return out
	}
	s.Env = expand("env", s.Env)
	s.Headers = expand("headers", s.Headers)
	s.Args = slices.Clone(s.Args)
	return s, errors.Join(errs...)
}

func secretKeys(m map[string]Secret) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// MarshalJSON encodes the server without its secrets: env values and
// headers as "[redacted]", the URL's query values hidden.
func (s MCPServer) MarshalJSON() ([]byte, error) {
	type shown struct {
		Name    string            `json:"name"`
		Command string            `json:"command,omitempty"`
		Args    []string          `json:"args,omitempty"`
		Env     map[string]Secret `json:"env,omitempty"`
		Dir     string            `json:"dir,omitempty"`
		URL     string            `json:"url,omitempty"`
		Headers map[string]Secret `json:"headers,omitempty"`
		Timeout string            `json:"timeout,omitempty"`
		AdHoc   bool              `json:"ad_hoc,omitempty"`
	}
	v := shown{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Dir, Headers: s.Headers, AdHoc: s.AdHoc}
	if s.URL != "" {
		v.URL = redact.URL(s.URL)
	}
	if s.Timeout != 0 {
		v.Timeout = fmtDur(s.Timeout)
	}
	return json.Marshal(v)
}

// SelectedMCPServers returns the MCP servers agent runs use: those agent.mcp
// names, in its order, with its ad-hoc servers; every entry of mcp_servers
// when agent.mcp is not set; none for "none". A name that is not in
// mcp_servers fails, listing the names that are.
func (c *Config) SelectedMCPServers() ([]MCPServer, error) {
	if len(c.Agent.MCP) == 0 {
		return slices.Clone(c.MCPServers), nil
	}
	if len(c.Agent.MCP) == 1 && c.Agent.MCP[0] == MCPNone {
		return nil, nil
	}
	configured := make([]string, len(c.MCPServers))
	for i, s := range c.MCPServers {
		configured[i] = s.Name
	}
	var out []MCPServer
	seen := map[string]bool{}
	for _, item := range c.Agent.MCP {
		s, adhoc, err := parseMCPItem(item)
		if err != nil { // checked at load; kept for Configs built by hand
			return nil, c.Invalid("agent.mcp", item, err.Error(), nil)
		}
		if seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		i := slices.Index(configured, s.Name)
		switch {
		case adhoc && i >= 0:
			return nil, c.Invalid("agent.mcp", s.Name+"=…", "another name: "+s.Name+" is a server of mcp_servers already", nil)
		case adhoc:
			out = append(out, s)
		case i < 0:
			have := "mcp_servers configures none"
			if len(configured) > 0 {
				have = "mcp_servers configures " + strings.Join(configured, ", ")
			}
			return nil, c.Invalid("agent.mcp", s.Name,
				"names of MCP servers in mcp_servers ("+have+"), none, or NAME=COMMAND ARGS… / NAME=https://URL for a server not in the file", nil)
		default:
			out = append(out, c.MCPServers[i])
		}
	}
	return out, nil
}

// --- the keys -----------------------------------------------------------

func mcpServersKey() entry {
	return entry{
		Key: Key{Name: "mcp_servers", Default: "none",
			Help: "MCP servers whose tools agents may use: a list of entries, each with name and either command (with args, env, dir) or url (with headers), and timeout (default 60s). Env values and headers may refer to variables as ${NAME}; they are never printed. In a DEEPGRAPH_ variable: the list as JSON."},
		set: func(c *Config, v any) error {
			servers, err := parseMCPServers(v)
			if err != nil {
				return err
			}
			c.MCPServers = servers
			return nil
		},
		show: func(c *Config) string {
			parts := make([]string, len(c.MCPServers))
			for i, s := range c.MCPServers {
				parts[i] = s.String()
			}
			return strings.Join(parts, ", ")
		},
		redact: func(string) string { return "(the list)" },
		empty:  "none",
		raw:    true,
	}
}

func mcpKey() entry {
	return entry{
		Key: Key{Name: "agent.mcp", Default: "all of mcp_servers", Flag: "--mcp",
			Help: "MCP servers the agent uses: names from mcp_servers (comma-separated, or --mcp repeated), none, or a server not in the file as NAME=COMMAND ARGS… (stdio) or NAME=https://URL."},
		set: func(c *Config, v any) error {
			items, err := mcpItems(v)
			if err != nil {
				return err
			}
			for _, it := range items {
				if _, _, err := parseMCPItem(it); err != nil {
					return allowedError{err.Error(), nil}
				}
			}
			if slices.Contains(items, MCPNone) && len(items) > 1 {
				return allowedError{"none alone, or names of MCP servers", nil}
			}
			c.Agent.MCP = items
			return nil
		},
		show:  func(c *Config) string { return strings.Join(c.Agent.MCP, ", ") },
		empty: "all of mcp_servers",
		kind:  "list",
	}
}

// mcpItems reads agent.mcp: a list whose items are ad-hoc servers
// (NAME=…, taken whole) or comma- or space-separated names.
func mcpItems(v any) ([]string, error) {
	var raw []string
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		raw = []string{x}
	case []string:
		raw = x
	case []any:
		for _, it := range x {
			s, ok := it.(string)
			if !ok {
				return nil, allowedError{"a list of MCP server names", nil}
			}
			raw = append(raw, s)
		}
	default:
		return nil, allowedError{"a list of MCP server names", nil}
	}
	var out []string
	for _, s := range raw {
		s = strings.TrimSpace(s)
		if strings.Contains(s, "=") {
			out = append(out, s)
			continue
		}
		for _, name := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
			if name == "off" {
				name = MCPNone
			}
			out = append(out, name)
		}
	}
	return out, nil
}

// parseMCPItem reads one item of agent.mcp: a name, or NAME=URL, or
// NAME=COMMAND ARGS… split as a shell would (quotes, backslashes).
func parseMCPItem(item string) (s MCPServer, adhoc bool, err error) {
	name, spec, ok := strings.Cut(item, "=")
	name = strings.TrimSpace(name)
	if item == MCPNone {
		return MCPServer{Name: MCPNone}, false, nil
	}
	if !mcpNameRe().MatchString(name) {
		return s, false, fmt.Errorf("MCP server names of %s (or NAME=COMMAND ARGS… / NAME=https://URL)", mcpNameRule)
	}
	if !ok {
		return MCPServer{Name: name}, false, nil
	}
	spec = strings.TrimSpace(spec)
	s = MCPServer{Name: name, Timeout: DefaultMCPTimeout, AdHoc: true}
	if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
		if _, err := checkURL(spec); err != nil {
			return s, true, fmt.Errorf("NAME=https://URL with a valid URL for %s", name)
		}
		s.URL = spec
		return s, true, nil
	}
	words, err := splitCommand(spec)
	if err != nil || len(words) == 0 {
		if err == nil {
			err = errors.New("nothing after =")
		}
		return s, true, fmt.Errorf("NAME=COMMAND ARGS… for %s, quoted as in a shell (%v)", name, err)
	}
	s.Command, s.Args = words[0], words[1:]
	return s, true, nil
}

// splitCommand splits a command line into words as a POSIX shell would for
// simple quoting: blanks separate words; '…' keeps everything literally;
// "…" keeps blanks, with \" \\ \$ and \` escaped; a backslash outside
// quotes escapes the next character. Nothing is expanded.
func splitCommand(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
	)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("a ' is not closed")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New(`a " is not closed`)
			}
			in = true
		case ch == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("a \\ ends the command")
			}
			i++
			cur.WriteByte(s[i])
			in = true
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// mcpFields are the fields of an mcp_servers entry.
var mcpFields = []string{"name", "command", "args", "env", "dir", "url", "headers", "timeout"}

// mcpErrors are the problems of mcp_servers, one per entry field.
type mcpErrors []*Error

func (e mcpErrors) Error() string {
	msgs := make([]string, len(e))
	for i, x := range e {
		msgs[i] = x.Error()
	}
	return strings.Join(msgs, "\n")
}

// parseMCPServers reads mcp_servers: a list of entries (from a file), or
// its JSON (from a variable).
func parseMCPServers(v any) ([]MCPServer, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		if strings.TrimSpace(x) == "" {
			return nil, nil
		}
		var list []any
		if err := json.Unmarshal([]byte(x), &list); err != nil {
			return nil, allowedError{`a JSON list of servers, like [{"name":"files","command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/data"]}]`, nil}
		}
		v = list
	}
	list, ok := v.([]any)
	if !ok {
		return nil, allowedError{"a list of servers, each with name and command or url (see research config keys)", nil}
	}
	var (
		out  []MCPServer
		errs mcpErrors
	)
	names := map[string]int{}
	for i, item := range list {
		s, ferrs := parseMCPEntry(i, item)
		if len(ferrs) > 0 {
			errs = append(errs, ferrs...)
			continue
		}
		if j, dup := names[s.Name]; dup {
			errs = append(errs, &Error{Key: fmt.Sprintf("mcp_servers[%d].name", i+1), Value: s.Name,
				Allowed: fmt.Sprintf("a name of its own: entry %d is called %s already", j+1, s.Name)})
			continue
		}
		names[s.Name] = i
		out = append(out, s)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// parseMCPEntry reads entry i (0-based) of mcp_servers.
func parseMCPEntry(i int, item any) (MCPServer, []*Error) {
	m, ok := asMap(item)
	if !ok {
		return MCPServer{}, []*Error{{Key: fmt.Sprintf("mcp_servers[%d]", i+1), Value: fmt.Sprint(item),
			Allowed: "an entry with name and either command (stdio) or url (streamable HTTP), e.g. {name: files, command: npx, args: [-y, \"@modelcontextprotocol/server-filesystem\", /data]}"}}
	}
	s := MCPServer{Timeout: DefaultMCPTimeout}
	label := fmt.Sprintf("mcp_servers[%d]", i+1)
	if n, ok := m["name"].(string); ok && mcpNameRe().MatchString(strings.TrimSpace(n)) {
		s.Name = strings.TrimSpace(n)
		label = "mcp_servers[" + s.Name + "]"
	}
	var errs []*Error
	bad := func(field, value, allowed string) {
		errs = append(errs, &Error{Key: label + "." + field, Value: value, Allowed: allowed})
	}
	for _, k := range sortedAnyKeys(m) {
		if slices.Contains(mcpFields, k) {
			continue
		}
		allowed := "only the fields " + strings.Join(mcpFields, ", ")
		if sug := closestOf(k, mcpFields); sug != "" {
			allowed = fmt.Sprintf("%s (did you mean %q?)", allowed, sug)
		}
		errs = append(errs, &Error{Key: label, Value: k + ":", Allowed: allowed})
	}
	str := func(field string) (string, bool) {
		v, present := m[field]
		if !present || v == nil {
			return "", false
		}
		s, err := asString(v)
		if err != nil {
			bad(field, fmt.Sprint(v), "a single value")
			return "", false
		}
		return strings.TrimSpace(s), true
	}

	if _, present := m["name"]; !present {
		bad("name", "", "a name of "+mcpNameRule+" (it prefixes the server's tool names: name.tool)")
	} else if s.Name == "" {
		v, _ := str("name")
		bad("name", v, mcpNameRule+" (it prefixes the server's tool names: name.tool)")
	}
	cmd, hasCmd := str("command")
	u, hasURL := str("url")
	switch {
	case hasCmd && hasURL:
		bad("url", u, "either command (a stdio server) or url (a streamable-HTTP server), not both")
	case !hasCmd && !hasURL:
		bad("command", "", "command: PROGRAM (a stdio server, with args, env and dir) or url: https://… (a streamable-HTTP server, with headers)")
	case hasCmd && cmd == "":
		bad("command", "", "the program to run, e.g. npx")
	case hasURL:
		if _, err := checkURL(u); err != nil {
			bad("url", redact.URL(u), "an http or https URL such as https://mcp.example.com/mcp, without user:password (put credentials in headers)")
		}
	}
	s.Command = cmd
	s.URL = u

	if v, present := m["args"]; present && v != nil {
		args, ok := asStrings(v)
		if !ok {
			bad("args", fmt.Sprint(v), `a list of arguments, e.g. ["-y", "@modelcontextprotocol/server-filesystem", "/data"]`)
		}
		s.Args = args
	}
	if d, ok := str("dir"); ok && d != "" {
		if d, err := expandHome(d); err == nil {
			s.Dir = d
		} else {
			bad("dir", d, "a directory")
		}
	}
	s.Env = secretMap(m, "env", func(k string) bool { return envNameRe().MatchString(k) }, "variable names (letters, digits, '_') with values", bad)
	s.Headers = secretMap(m, "headers", func(k string) bool { return headerNameRe().MatchString(k) }, "header names with values, e.g. {Authorization: \"Bearer ${TOKEN}\"}", bad)
	if hasURL && (len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "") {
		bad("url", redact.URL(u), "command for args, env and dir: a url server takes headers")
	}
	if hasCmd && len(s.Headers) > 0 {
		bad("headers", "[redacted]", "url for headers: a command takes env")
	}
	if v, present := m["timeout"]; present && v != nil {
		d, err := asDuration(v)
		if err != nil || d < time.Second || d > MaxMCPTimeout {
			bad("timeout", fmt.Sprint(v), "a duration from 1s to 24h, like 60s or 5m (a bare number is seconds)")
		} else {
			s.Timeout = d
		}
	}
	return s, errs
}

// secretMap reads the map field of an entry, whose values are secrets.
func secretMap(m map[string]any, field string, validKey func(string) bool, allowed string, bad func(field, value, allowed string)) map[string]Secret {
	v, present := m[field]
	if !present || v == nil {
		return nil
	}
	mm, ok := asMap(v)
	if !ok {
		bad(field, "[redacted]", "a map of "+allowed)
		return nil
	}
	out := make(map[string]Secret, len(mm))
	for _, k := range sortedAnyKeys(mm) {
		if !validKey(k) {
			bad(field, k, allowed)
			continue
		}
		val, err := asString(mm[k])
		if err != nil {
			bad(field+"."+k, "[redacted]", "a single value")
			continue
		}
		if strings.ContainsAny(val, "\r\n\x00") {
			bad(field+"."+k, "[redacted]", "a value without line breaks")
			continue
		}
		for _, ref := range refRe().FindAllStringSubmatch(val, -1) {
			if !envNameRe().MatchString(ref[1]) {
				bad(field+"."+k, "[redacted]", "${NAME} references to environment variables with valid names")
			}
		}
		out[k] = Secret(val)
	}
	return out
}

func asMap(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case map[string]any:
		return x, true
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, false
			}
			out[ks] = val
		}
		return out, true
	}
	return nil, false
}

func asStrings(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, 0, len(x))
		for _, it := range x {
			s, err := asString(it)
			if err != nil {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// closestOf returns the candidate nearest to k when near enough to be a
// typo.
func closestOf(k string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := distance(strings.ToLower(k), c); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(2, len(k)/3) {
		return best
	}
	return ""
}

// mcpSecrets returns the values of the MCP servers' env and headers, as
// written and with their ${NAME} references expanded, for masking in
// output. Values shorter than 6 bytes are left out: masking every "1" of
// an output would garble it, and so short a value is no credential.
func (c *Config) mcpSecrets() []string {
	var out []string
	add := func(v string) {
		if len(v) >= 6 && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, s := range c.MCPServers {
		exp, _ := s.Expand(os.LookupEnv)
		for _, m := range []map[string]Secret{s.Env, s.Headers, exp.Env, exp.Headers} {
			for _, v := range m {
				add(v.Reveal())
				if f := strings.Fields(v.Reveal()); len(f) > 1 {
					add(f[len(f)-1]) // the token of "Bearer <token>"
				}
			}
		}
	}
	return out
}
