package agentserver_test

import (
	"io"
	"strings"
	"time"
)

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// sleepABit yields to the server's goroutines while a test polls.
func sleepABit() { time.Sleep(5 * time.Millisecond) }
