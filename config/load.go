package config

import (
	"github.com/deepgraph/deepgraph/internal/redact"

	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/deepgraph/deepgraph/research"
)

// EnvConfigFile names the variable that points at a config file when no
// --config flag is given.
const EnvConfigFile = "DEEPGRAPH_CONFIG"

// Loader reads a Config from its layers, lowest precedence first: the
// defaults of the key table, the config file, the environment, the flags.
type Loader struct {
	// File is the config file to read (the --config flag). "" means the
	// file named by DEEPGRAPH_CONFIG, else DefaultFile if it exists. A file
	// named explicitly must exist.
	File string
	// Flags are the command's flags. Each flag the key table names (Key.Flag)
	// is bound to its key and counts only when given on the command line.
	// Nil means no flags.
	Flags *pflag.FlagSet
	// UserConfigDir returns the directory under which deepgraph/config.yaml
	// is looked for; nil means os.UserConfigDir ($XDG_CONFIG_HOME or
	// ~/.config on Linux).
	UserConfigDir func() (string, error)
	// DefaultModel chooses the model when no layer sets one, given the
	// configured provider variables (Config.Getenv). It returns the spec
	// and why it was chosen ("GEMINI_API_KEY is set"), or "" for none.
	// Nil leaves Model empty.
	DefaultModel func(getenv func(string) string) (spec, why string)
}

// ErrInvalid matches every error about the configuration: a bad value
// (*Error), an unknown key (*UnknownKeyError), a config file that cannot be
// read. The CLI exits with status 2 on them.
var ErrInvalid = errors.New("invalid configuration")

// Error is a value that is not allowed. It never shows a secret's value.
type Error struct {
	Key     string // the key, e.g. "max_research_loops"
	Value   string // the value as given ("[redacted]" for secrets)
	Allowed string // what would be accepted
	Source  Source // where the value came from
	Err     error  // the underlying cause, if any
}

// Error reads "max_research_loops: -1 is not allowed: use a whole number
// from 1 to 50 (from flag --loops)".
func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %s is not allowed: use %s", e.Key, quoteValue(e.Value), e.Allowed)
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	if e.Source.Kind != FromDefault {
		msg += " (from " + e.Source.String() + ")"
	}
	return msg
}

// Is matches ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Invalid returns the *Error for a value of key that turned out unusable
// after loading (a corpus directory that does not exist), with c's record
// of where it came from.
func (c *Config) Invalid(key, value, allowed string, cause error) *Error {
	if e, ok := lookup(key); ok {
		value = e.shown(value)
	}
	return &Error{Key: key, Value: value, Allowed: allowed, Source: c.Source(key), Err: cause}
}

func quoteValue(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\n\"") {
		return fmt.Sprintf("%q", v)
	}
	return v
}

// UnknownKeyError is a key in a config file that no setting has.
type UnknownKeyError struct {
	Key        string
	File       string
	Suggestion string // the closest known key, or ""
}

// Error names the key and the file and suggests the closest known key.
func (e *UnknownKeyError) Error() string {
	msg := fmt.Sprintf("unknown key %q in %s", e.Key, e.File)
	if e.Suggestion != "" {
		msg += fmt.Sprintf(": did you mean %q?", e.Suggestion)
	}
	return msg + " (`research config keys` lists every key)"
}

// Is matches ErrInvalid.
func (e *UnknownKeyError) Is(target error) bool { return target == ErrInvalid }

// DefaultFile returns the default config file path,
// <user config dir>/deepgraph/config.yaml.
func DefaultFile() (string, error) { return defaultFile(os.UserConfigDir) }

// DefaultStore returns where runs are kept by default:
// $XDG_STATE_HOME/deepgraph/runs.db, or ~/.local/state/deepgraph/runs.db.
func DefaultStore() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "deepgraph", "runs.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the default store: %w; set --store (key store) to a file, or --no-save", err)
	}
	return filepath.Join(home, ".local", "state", "deepgraph", "runs.db"), nil
}

func defaultFile(dir func() (string, error)) (string, error) {
	d, err := dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "deepgraph", "config.yaml"), nil
}

// Load resolves every key. Each value is validated; all problems are
// returned together (errors.Join), each matching ErrInvalid.
//
// Effort, when set, sets number_of_initial_queries and max_research_loops,
// except where those were set on a layer at least as high as the effort's
// (so --queries 2 --effort high searches 2 queries over 10 loops).
func (l Loader) Load() (*Config, error) {
	c := &Config{}
	for _, e := range table {
		if err := e.set(c, e.def); err != nil {
			return nil, fmt.Errorf("config: default of %s is invalid: %w", e.Name, err) // a bug in the table
		}
	}

	path, explicit, err := l.file()
	if err != nil {
		return nil, err
	}
	v := viper.New()
	var fileV *viper.Viper
	var errs []error
	if path != "" {
		fileV, err = readFile(path, explicit)
		if err != nil {
			return nil, err
		}
		if fileV != nil {
			c.File = path
			errs = append(errs, unknownKeys(fileV, path)...)
			if err := v.MergeConfigMap(fileV.AllSettings()); err != nil {
				return nil, fmt.Errorf("%w: config file %s: %v", ErrInvalid, path, err)
			}
		}
	}
	for _, e := range table {
		if err := v.BindEnv(append([]string{e.Name}, e.Env...)...); err != nil {
			return nil, err
		}
		if f := l.flag(e); f != nil {
			if err := v.BindPFlag(e.Name, f); err != nil {
				return nil, err
			}
		}
	}

	var rawFile map[string]any
	for _, e := range table {
		src := l.source(e, fileV, path)
		if src.Kind == FromDefault {
			continue
		}
		c.setSource(e.Name, src)
		raw := v.Get(e.Name)
		if e.raw && src.Kind == FromFile {
			if rawFile == nil {
				if rawFile, err = readRaw(path); err != nil {
					return nil, err
				}
			}
			raw = rawFile[e.Name]
		}
		if err := e.set(c, raw); err != nil {
			var me mcpErrors
			if errors.As(err, &me) {
				for _, x := range me {
					x.Source = src
					errs = append(errs, x)
				}
				continue
			}
			errs = append(errs, valueError(e, raw, src, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := c.applyEffort(); err != nil {
		return nil, err
	}
	if c.Model == "" && l.DefaultModel != nil {
		spec, why := l.DefaultModel(c.Getenv)
		c.SetDefaultModel(spec, why)
	}
	return c, nil
}

func (l Loader) file() (path string, explicit bool, err error) {
	if l.File != "" {
		return l.File, true, nil
	}
	if p := os.Getenv(EnvConfigFile); p != "" {
		return p, true, nil
	}
	dir := l.UserConfigDir
	if dir == nil {
		dir = os.UserConfigDir
	}
	p, err := defaultFile(dir)
	if err != nil {
		return "", false, nil // no config directory (no HOME): no default file
	}
	return p, false, nil
}

func (l Loader) flag(e entry) *pflag.Flag {
	if l.Flags == nil || e.Flag == "" {
		return nil
	}
	return l.Flags.Lookup(strings.TrimPrefix(e.Flag, "--"))
}

func (l Loader) source(e entry, fileV *viper.Viper, path string) Source {
	if f := l.flag(e); f != nil && f.Changed {
		return Source{Kind: FromFlag, Name: e.Flag}
	}
	for _, name := range e.Env {
		if val, ok := os.LookupEnv(name); ok && val != "" {
			return Source{Kind: FromEnv, Name: name}
		}
	}
	if fileV != nil && fileV.IsSet(e.Name) {
		return Source{Kind: FromFile, Name: path}
	}
	return Source{Kind: FromDefault}
}

// readFile reads a config file into its own viper, so that its keys can be
// checked. A missing default file is no error (nil, nil).
func readFile(path string, explicit bool) (*viper.Viper, error) {
	info, err := os.Stat(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: config file %s: %v", ErrInvalid, path, err)
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%w: config file %s is a directory", ErrInvalid, path)
	}
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if !slices.Contains([]string{"yaml", "yml", "json", "toml"}, ext) {
		return nil, fmt.Errorf("%w: config file %s: use a .yaml, .yml, .json or .toml file", ErrInvalid, path)
	}
	fv := viper.New()
	fv.SetConfigFile(path)
	fv.SetConfigType(ext)
	if err := fv.ReadInConfig(); err != nil {
		return nil, fmt.Errorf("%w: config file %s: %v", ErrInvalid, path, err)
	}
	return fv, nil
}

// readRaw decodes a config file as written: the keys of its maps keep
// their case (viper lowercases them). Only the top level's keys are
// matched without regard to case, as viper matches them.
func readRaw(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: config file %s: %v", ErrInvalid, path, err)
	}
	var m map[string]any
	switch strings.ToLower(strings.TrimPrefix(filepath.Ext(path), ".")) {
	case "yaml", "yml":
		err = yaml.Unmarshal(b, &m)
	case "json":
		err = json.Unmarshal(b, &m)
	case "toml":
		err = toml.Unmarshal(b, &m)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: config file %s: %v", ErrInvalid, path, err)
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out, nil
}

// unknownKeys reports every key of the file that is not in the table.
func unknownKeys(fv *viper.Viper, path string) []error {
	var errs []error
	keys := fv.AllKeys()
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := lookup(k); ok {
			continue
		}
		if name, _, ok := strings.Cut(k, "."); ok && name == "prices" {
			continue // a map of model specs, read raw (see pricesKey)
		}
		if slices.Contains(sections, k) {
			errs = append(errs, &Error{Key: k, Value: fmt.Sprint(fv.Get(k)), Allowed: "a section of keys (" + strings.Join(sectionKeys(k), ", ") + ")",
				Source: Source{Kind: FromFile, Name: path}})
			continue
		}
		errs = append(errs, &UnknownKeyError{Key: k, File: path, Suggestion: closest(k)})
	}
	return errs
}

func sectionKeys(section string) []string {
	var out []string
	for _, e := range table {
		if rest, ok := strings.CutPrefix(e.Name, section+"."); ok {
			out = append(out, rest)
		}
	}
	return out
}

// shown is a value of the key as errors may show it: a secret's hidden,
// and so is the password of any URL (a value refused for carrying one must
// not repeat it).
func (e entry) shown(v string) string {
	switch {
	case e.Secret:
		return "[redacted]"
	case e.redact != nil:
		return e.redact(v)
	case strings.Contains(v, "://") && strings.Contains(v, "@"):
		return redact.URL(v)
	}
	return v
}

func valueError(e entry, raw any, src Source, err error) *Error {
	val := fmt.Sprint(raw)
	switch x := raw.(type) {
	case nil:
		val = ""
	case string:
		val = x
	}
	out := &Error{Key: e.Name, Value: e.shown(val), Source: src}
	var ae allowedError
	if errors.As(err, &ae) {
		out.Allowed, out.Err = ae.allowed, ae.cause
	} else {
		out.Allowed, out.Err = "a valid value", err
	}
	return out
}

// applyEffort turns the effort preset into queries and loops.
func (c *Config) applyEffort() error {
	if c.Effort == "" {
		return nil
	}
	eff, err := research.EffortByName(c.Effort)
	if err != nil {
		return c.Invalid("effort", c.Effort, "one of low, medium, high", nil)
	}
	es := c.Source("effort")
	why := eff.Name + " (" + es.String() + ")"
	for _, k := range []struct {
		key   string
		field *int
		value int
	}{
		{"number_of_initial_queries", &c.InitialQueries, eff.Queries},
		{"max_research_loops", &c.MaxLoops, eff.Loops},
	} {
		ks := c.Source(k.key)
		if ks.Kind != FromDefault && ks.rank() >= es.rank() {
			continue
		}
		*k.field = k.value
		c.setSource(k.key, Source{Kind: FromEffort, Name: why})
	}
	return nil
}

// closest returns the known key nearest to k by edit distance, when near
// enough to be a likely typo.
func closest(k string) string {
	best, bestD := "", 1<<30
	for _, e := range table {
		for _, cand := range []string{e.Name, lastPart(e.Name)} {
			if d := distance(k, cand); d < bestD {
				best, bestD = e.Name, d
			}
		}
	}
	if bestD <= max(2, len(k)/3) {
		return best
	}
	// A shortened name: every word of k is a word of one key.
	words := strings.Split(lastPart(k), "_")
	for _, e := range table {
		have := strings.Split(lastPart(e.Name), "_")
		if len(words) > 1 && !slices.ContainsFunc(words, func(w string) bool { return !slices.Contains(have, w) }) {
			return e.Name
		}
	}
	return ""
}

func lastPart(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
