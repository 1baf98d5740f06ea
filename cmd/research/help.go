package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deepgraph/deepgraph/config"
)

// Help that fits the command. Every configuration key's flag is accepted by
// every command (they are the root's persistent flags, read by
// config.Loader wherever the command runs), but a command's help lists only
// the ones it reads: its own flags and the groups of settings below that
// usesFlags gives it. The flags every command takes (--config, -q, -v, …)
// are summed up on one "Global flags" line, and research help flags
// describes them all.

// globalFlags are the flags of every command, summed up in each help.
var globalFlags = []string{"config", "quiet", "verbose", "no-save", "no-input", "trace"}

// flagGroups are the settings' flags by what they set.
var flagGroups = map[string][]string{
	"models": {"model", "query-model", "research-model", "reflection-model", "answer-model"},
	"calls":  {"llm-timeout", "retries", "max-concurrency", "timeout", "max-cost", "context-budget", "research-budget"},
	"effort": {"effort", "queries", "loops"},
	"search": {"search", "corpus", "corpus-cache-dir", "allow-private-urls", "search-timeout", "fetch-timeout", "search-concurrency", "page-concurrency"},
	"output": {"format"},
	"store":  {"store"},
	"serve":  {"addr", "max-running", "queue-size", "resume-interrupted", "allow-agent"},
}

// usesFlags are the groups of settings (or single flags) each command
// reads ("" is the root: research "question").
var usesFlags = map[string][]string{
	"":       {"models", "calls", "effort", "search", "output", "store"},
	"agent":  {"model", "llm-timeout", "retries", "max-concurrency", "timeout", "max-cost", "search", "output", "store"},
	"flow":   {"models", "calls", "effort", "search", "output", "store"},
	"resume": {"models", "calls", "effort", "search", "output", "store"},
	"serve":  {"models", "calls", "effort", "search", "store", "serve"},
	"mcp":    {"models", "calls", "effort", "search"},
	"worker": {"models", "llm-timeout", "retries", "max-concurrency", "max-cost", "context-budget", "research-budget", "effort", "search"},
	"batch":  {"effort", "timeout"},
	"eval":   {"query-model", "research-model", "reflection-model", "answer-model", "calls", "queries", "loops", "search", "store"},
	"runs":   {"output", "store"},
	"show":   {"output", "store"},
	"rm":     {"store"},
}

// flagsUsed are the inherited flags cmd's help lists.
func flagsUsed(cmd *cobra.Command) []string {
	key := cmd.Name()
	if !cmd.HasParent() {
		key = ""
	} else if cmd.Parent().HasParent() {
		return nil // config keys, completion bash, …
	}
	var names []string
	for _, g := range usesFlags[key] {
		group, ok := flagGroups[g]
		if !ok {
			group = []string{g}
		}
		for _, n := range group {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// setHelp gives root and its commands the usage above, --version, and the
// help topic "flags".
func (c *cli) setHelp(root *cobra.Command) {
	// --version is research's own flag, not cobra's (root.Version): cobra
	// prints a version in its own words unless given a text/template, and
	// a template executed anywhere in the program keeps every exported
	// method of every type in the binary (the linker can no longer tell
	// which are called), tens of megabytes with the model SDKs.
	var version bool
	root.Flags().BoolVar(&version, "version", false, "print the version and exit")
	pre := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if cmd == root && version {
			if _, err := fmt.Fprintln(cmd.OutOrStdout(), versionString()); err != nil {
				return err
			}
			return errVersionShown
		}
		if pre == nil {
			return nil
		}
		return pre(cmd, args)
	}
	root.SetUsageFunc(usage)
	root.AddCommand(&cobra.Command{
		Use:   "flags",
		Short: "The flags every command takes, and every setting's flag",
		Long:  flagsTopic(root),
	})
}

// errVersionShown ends a run of research --version that printed the
// version: nothing else runs, and the exit status is 0.
var errVersionShown = errors.New("version shown")

// usage writes cmd's usage: its use line, commands, examples, the flags it
// reads, and one line for the global ones.
func usage(cmd *cobra.Command) error {
	w := cmd.OutOrStderr()
	fmt.Fprint(w, "Usage:")
	if cmd.Runnable() {
		fmt.Fprintf(w, "\n  %s", cmd.UseLine())
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n  %s [command]", cmd.CommandPath())
	}
	if cmd.HasExample() {
		fmt.Fprintf(w, "\n\nExamples:\n%s", cmd.Example)
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprint(w, "\n\nCommands:")
		width := 0
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				width = max(width, len(sub.Name()))
			}
		}
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(w, "\n  %-*s  %s", width, sub.Name(), sub.Short)
			}
		}
	}
	if fs := shownFlags(cmd); fs.HasAvailableFlags() {
		fmt.Fprintf(w, "\n\nFlags:\n%s", strings.TrimRight(fs.FlagUsages(), " \n"))
	}
	fmt.Fprint(w, "\n\nGlobal flags: --config FILE, -q/--quiet, -v/--verbose, --no-save, --no-input, --trace FILE (research help flags)")
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n\nUse \"%s [command] --help\" for more about a command.", cmd.CommandPath())
	}
	fmt.Fprintln(w)
	return nil
}

// shownFlags are the flags cmd's help lists: its own, but for the global
// ones, and the settings it reads.
func shownFlags(cmd *cobra.Command) *pflag.FlagSet {
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	fs.SortFlags = false
	root := cmd.Root()
	var own []*pflag.Flag
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if root.PersistentFlags().Lookup(f.Name) == f { // a setting or a global flag of the root
			return
		}
		own = append(own, f)
	})
	slices.SortFunc(own, func(a, b *pflag.Flag) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range own {
		fs.AddFlag(f)
	}
	for _, name := range flagsUsed(cmd) {
		if f := cmd.Flags().Lookup(name); f != nil && fs.Lookup(name) == nil {
			fs.AddFlag(f)
		}
	}
	return fs
}

// flagsTopic is research help flags: the global flags, then every
// setting's flag by group, and which commands read it.
func flagsTopic(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString(`Every command takes these flags:

`)
	global := pflag.NewFlagSet("global", pflag.ContinueOnError)
	global.SortFlags = false
	for _, n := range globalFlags {
		global.AddFlag(root.PersistentFlags().Lookup(n))
	}
	b.WriteString(global.FlagUsages())
	b.WriteString(`
Every setting also has a flag, which overrides its environment variable and
config file key (research config keys lists them all, with their defaults).
Each command's help lists the settings it reads:

`)
	titles := []struct{ group, title string }{
		{"models", "Models"}, {"calls", "Model calls and limits"}, {"effort", "Research effort"},
		{"search", "Search and pages"}, {"output", "Output"}, {"store", "Run store"}, {"serve", "research serve"},
	}
	for _, t := range titles {
		fs := pflag.NewFlagSet(t.group, pflag.ContinueOnError)
		fs.SortFlags = false
		for _, n := range flagGroups[t.group] {
			if f := root.PersistentFlags().Lookup(n); f != nil {
				fs.AddFlag(f)
			}
		}
		fmt.Fprintf(&b, "%s:\n%s\n", t.title, fs.FlagUsages())
	}
	agent := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	if err := config.AddFlags(agent, config.KeysWithFlags("agent.")...); err == nil {
		fmt.Fprintf(&b, "research agent (also flow and resume):\n%s", agent.FlagUsages())
	}
	return strings.TrimRight(b.String(), "\n")
}
