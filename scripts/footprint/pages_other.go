//go:build !linux

package main

import (
	"errors"
	"io"
)

func pages([]string, io.Writer) error {
	return errors.New("pages reads /proc/PID/pagemap: Linux only")
}
