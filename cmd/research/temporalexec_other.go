//go:build !temporal && !unix

package main

import "io"

// runProgram runs the program at path with args as a child (runChild): this
// system has no exec that replaces a process.
func runProgram(path string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runChild(path, args, stdin, stdout, stderr)
}
