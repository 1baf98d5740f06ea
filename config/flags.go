package config

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// shorthands are the one-letter forms of key flags.
var shorthands = map[string]string{"model": "m"}

// AddFlags defines on fs the flags of the named keys (all keys with a flag
// when none is named), typed and documented from the key table, so the table
// stays the one place that describes them. The flags' own defaults are
// zero values: a flag counts only when given (Loader.Flags), and its usage
// text shows the key's real default.
func AddFlags(fs *pflag.FlagSet, keys ...string) error {
	if len(keys) == 0 {
		for _, e := range table {
			if e.Flag != "" {
				keys = append(keys, e.Name)
			}
		}
	}
	for _, k := range keys {
		e, ok := lookup(k)
		if !ok || e.Flag == "" {
			return fmt.Errorf("config: key %q has no flag", k)
		}
		name := strings.TrimPrefix(e.Flag, "--")
		usage := fmt.Sprintf("%s (default %s; key %s)", e.Help, e.Default, e.Name)
		short := shorthands[e.Name]
		switch e.kind {
		case "int":
			fs.IntP(name, short, 0, usage)
		case "bool":
			fs.BoolP(name, short, false, usage)
		case "list":
			fs.StringArrayP(name, short, nil, usage)
		default:
			fs.StringP(name, short, "", usage)
		}
	}
	return nil
}

// KeysWithFlags returns the names of the keys that have a flag, in table
// order, optionally only those whose name starts with prefix.
func KeysWithFlags(prefix string) []string {
	var out []string
	for _, e := range table {
		if e.Flag != "" && strings.HasPrefix(e.Name, prefix) {
			out = append(out, e.Name)
		}
	}
	return out
}
