package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/llm"
)

// version is the release version; set it with
// -ldflags "-X main.version=v1.2.3". Empty means the module version from
// the build information (go install …@v1.2.3), else "devel".
var version string

func (c *cli) graphCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "graph",
		Short: "Print the deep-search graph as a Mermaid diagram",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := app.Mermaid()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(c.stdout, strings.TrimRight(m, "\n"))
			return err
		},
	}
}

func (c *cli) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration, where each value came from, and the chosen back end",
		Long: `config prints every configuration key with its effective value and where it
came from (default, file, env VAR, flag --name). Keys are never printed: a
set key shows as "set (from GEMINI_API_KEY)". Flags given here are applied,
so "research config --effort high" shows their effect.

Precedence, lowest first: defaults < config file < environment < flags.
"research config keys" lists every key with its default, variables and flag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.loadConfig(cmd)
			if err != nil {
				return err
			}
			var b strings.Builder
			switch {
			case cfg.File != "":
				fmt.Fprintf(&b, "# config file: %s\n", cfg.File)
			default:
				def, _ := config.DefaultFile()
				fmt.Fprintf(&b, "# config file: none (looked for %s)\n", orText(def, "no user config directory"))
			}
			research := cfg.RoleModel(llm.RoleResearch)
			if plan, err := app.ChooseBackend(cfg, research); err != nil {
				fmt.Fprintf(&b, "# search back end: none: %s\n", oneLine(err.Error(), 0))
			} else {
				desc := string(plan.Kind)
				if len(plan.Providers) > 0 {
					desc += " (" + strings.Join(plan.Providers, ", ") + ")"
				}
				fmt.Fprintf(&b, "# search back end: %s, because %s\n", desc, plan.Why)
			}
			if cfg.Model == "" {
				b.WriteString("# model: none configured (research needs one: see research --help)\n")
			}
			b.WriteString(cfg.String())
			_, err = fmt.Fprint(c.stdout, c.console.redact(b.String()))
			return err
		},
	}
	if err := config.AddFlags(cmd.Flags(), config.KeysWithFlags("agent.")...); err != nil {
		panic(err)
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "keys",
		Short: "List every configuration key with its default, environment variables and flag",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(c.stdout, keysTable())
			return err
		},
	})
	return cmd
}

// keysTable documents every key.
func keysTable() string {
	var b strings.Builder
	b.WriteString("Configuration keys (config file key, default, environment, flag). Precedence: default < file < env < flag.\n")
	b.WriteString("In a config file, agent.* keys go under an \"agent:\" section.\n\n")
	for _, k := range config.Keys() {
		fmt.Fprintf(&b, "%s\n", k.Name)
		fmt.Fprintf(&b, "    default: %s\n", k.Default)
		fmt.Fprintf(&b, "    env:     %s\n", strings.Join(k.Env, ", "))
		if k.Flag != "" {
			fmt.Fprintf(&b, "    flag:    %s\n", k.Flag)
		}
		if k.Secret {
			b.WriteString("    secret:  never printed\n")
		}
		fmt.Fprintf(&b, "    %s\n\n", k.Help)
	}
	return b.String()
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func (c *cli) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(c.stdout, versionString())
			return err
		},
	}
}

// versionString is "research v1.2.3 (commit abc1234, go1.26.8 linux/amd64)".
func versionString() string {
	v, commit := buildVersion()
	var details []string
	if commit != "" {
		details = append(details, "commit "+commit)
	}
	details = append(details, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("research %s (%s)", v, strings.Join(details, ", "))
}

// shortVersion is the version alone, as research serve reports it: "v1.2.3",
// or "devel (commit abc1234)" for a build of a working copy.
func shortVersion() string {
	v, commit := buildVersion()
	if v == "devel" && commit != "" {
		v += " (commit " + commit + ")"
	}
	return v
}

// buildVersion is the release version (main.version, else the module
// version from the build information, else "devel") and the commit the
// binary was built from ("" when unknown; "+dirty" with local changes).
func buildVersion() (v, commit string) {
	v = version
	var dirty bool
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit != "" && dirty {
		commit += "+dirty"
	}
	return v, commit
}
