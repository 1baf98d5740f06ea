//go:build !temporal

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// research hands research on Temporal (research worker, research batch,
// research --temporal) to a program of its own, research-temporal, the way
// git and kubectl run their plugins: found next to research's executable,
// else on PATH, it gets the same arguments, environment and standard
// streams and its exit status is research's. The Temporal SDK and gRPC
// stay out of research: linked in, their reflection keeps the linker from
// dropping unused methods and their init runs on every start, which made
// the program three times bigger and slower to start for a feature most
// runs never use. research-temporal is this program built with the build
// tag temporal (docs/temporal.md).

func (c *cli) workerCmd() *cobra.Command { return c.handedOver(workerCommand()) }

func (c *cli) batchCmd() *cobra.Command { return c.handedOver(batchCommand()) }

// handedOver makes cmd run research-temporal with the command line as it
// is: that program parses the flags.
func (c *cli) handedOver(cmd *cobra.Command) *cobra.Command {
	cmd.DisableFlagParsing = true
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		err := c.execTemporal()
		if errors.Is(err, errNoTemporalProgram) && slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" }) {
			_ = cmd.Help()
		}
		return err
	}
	// research help worker: that program's help, which has the flags.
	cmd.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if _, err := findProgram(programDirs(), temporalProgram); err == nil {
			if err := c.execTemporal(); err != nil {
				c.console.errorLine(err.Error())
			}
			return
		}
		cmd.Parent().HelpFunc()(cmd, args)
	})
	return cmd
}

// onTemporal runs research "…" --temporal HOST:PORT in research-temporal.
func (c *cli) onTemporal(*cobra.Command, []string) error { return c.execTemporal() }

// errNoTemporalProgram is the error when research-temporal is not found.
var errNoTemporalProgram = errors.New("research-temporal not found")

// execTemporal runs research-temporal with this program's arguments.
func (c *cli) execTemporal() error {
	dirs := programDirs()
	path, err := findProgram(dirs, temporalProgram)
	if err != nil {
		dir := "DIR"
		if len(dirs) > 0 {
			dir = dirs[0]
		}
		return usageErr("%w next to research (%s) or on PATH: research worker, research batch and research --temporal run in that program; build it with go build -tags temporal -o %s ./cmd/research in deepgraph's source (docs/temporal.md)",
			errNoTemporalProgram, dir, filepath.Join(dir, temporalProgram+exeSuffix()))
	}
	c.console.stop()
	return runProgram(path, c.args, c.stdin, c.stdout, c.stderr)
}

// programDirs are the directories research was started from: that of the
// name it was started by (when a path), then its executable's, with and
// without symbolic links resolved.
func programDirs() []string {
	var dirs []string
	if strings.ContainsRune(os.Args[0], filepath.Separator) {
		dirs = append(dirs, filepath.Dir(os.Args[0]))
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	return dirs
}

// findProgram looks for the executable name in dirs, then on PATH.
func findProgram(dirs []string, name string) (string, error) {
	for _, dir := range dirs {
		p := filepath.Join(dir, name+exeSuffix())
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0) {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// runChild runs the program at path with args as a child on the given
// streams, and returns its exit status as research's (its messages are its
// own).
func runChild(path string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return &exitError{code: ee.ExitCode()}
	case err != nil:
		return fmt.Errorf("running %s: %w", path, err)
	}
	return nil
}
