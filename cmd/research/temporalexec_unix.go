//go:build !temporal && unix

package main

import (
	"io"
	"os"
	"syscall"
)

// runProgram replaces this process with the program at path, run with
// args, when the standard streams are this process's own: it then has
// them, the environment and the signals as research had them, and its exit
// status is research's. Otherwise (a caller's buffers) it runs the program
// as a child (runChild).
func runProgram(path string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if stdin == io.Reader(os.Stdin) && stdout == io.Writer(os.Stdout) && stderr == io.Writer(os.Stderr) {
		err := syscall.Exec(path, append([]string{path}, args...), os.Environ())
		return &exitError{code: exitFailed, err: &os.PathError{Op: "exec", Path: path, Err: err}}
	}
	return runChild(path, args, stdin, stdout, stderr)
}
