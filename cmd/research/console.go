package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/internal/app"
)

// console is stderr: timeline lines, log records, errors and, on a
// terminal, a spinner on the last line. Everything written to stderr goes
// through it, so lines never interleave with the spinner, and known secrets
// are masked as a last line of defence.
type console struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	quiet   bool
	secrets []string
	stamp   func() string // the timeline's "[  1.2s  812 tok] " for log lines, while one runs

	// spinner state (terminal only)
	status  string
	began   time.Time
	frame   int
	drawn   bool
	stopCh  chan struct{}
	stopped chan struct{}
}

// spinnerFrames are drawn in turn, every spinnerTick.
var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

const spinnerTick = 100 * time.Millisecond

func newConsole(w io.Writer, tty bool) *console { return &console{w: w, tty: tty} }

// addSecrets registers the configured keys (and a store DSN's password)
// for masking.
func (c *console) addSecrets(cfg *config.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range cfg.Secrets() {
		if len(v) >= 4 {
			c.secrets = append(c.secrets, v)
		}
	}
}

func (c *console) setQuiet(q bool) {
	c.mu.Lock()
	c.quiet = q
	c.mu.Unlock()
}

// redact masks known secrets in s.
func (c *console) redact(s string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.redactLocked(s)
}

func (c *console) redactLocked(s string) string {
	for _, sec := range c.secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	return s
}

// start shows the spinner with status (on a terminal, unless quiet).
func (c *console) start(status string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status = status
	if !c.tty || c.quiet || c.stopCh != nil {
		return
	}
	c.began = time.Now()
	c.stopCh, c.stopped = make(chan struct{}), make(chan struct{})
	go c.spin(c.stopCh, c.stopped)
}

func (c *console) spin(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	t := time.NewTicker(spinnerTick)
	defer t.Stop()
	for {
		c.mu.Lock()
		c.drawLocked()
		c.mu.Unlock()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (c *console) drawLocked() {
	c.frame = (c.frame + 1) % len(spinnerFrames)
	line := fmt.Sprintf("%s %s (%.0fs)", spinnerFrames[c.frame], oneLine(c.status, 70), time.Since(c.began).Seconds())
	_, _ = fmt.Fprintf(c.w, "\r\033[K%s", line)
	c.drawn = true
}

func (c *console) clearLocked() {
	if c.drawn {
		_, _ = io.WriteString(c.w, "\r\033[K")
		c.drawn = false
	}
}

// setStatus changes the spinner's text.
func (c *console) setStatus(s string) {
	c.mu.Lock()
	c.status = s
	c.mu.Unlock()
}

// stop removes the spinner. It is safe to call more than once.
func (c *console) stop() {
	c.mu.Lock()
	stopCh, stopped := c.stopCh, c.stopped
	c.stopCh = nil
	c.mu.Unlock()
	if stopCh == nil {
		return
	}
	close(stopCh)
	<-stopped
	c.mu.Lock()
	c.clearLocked()
	c.mu.Unlock()
}

// line prints a timeline line (nothing when quiet).
func (c *console) line(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.quiet {
		return
	}
	c.writeLocked(s + "\n")
}

// setStamp makes stamp prefix the log lines (nil: none).
func (c *console) setStamp(stamp func() string) {
	c.mu.Lock()
	c.stamp = stamp
	c.mu.Unlock()
}

// stamped prints a log line, after the timeline's stamp while a run shows
// one (nothing when quiet).
func (c *console) stamped(s string) {
	c.mu.Lock()
	stamp := c.stamp
	c.mu.Unlock()
	if stamp != nil {
		s = stamp() + s
	}
	c.line(s)
}

// plain prints text as it is (help and hints; also when quiet).
func (c *console) plain(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeLocked(s)
}

// errorLine prints "research: msg" (also when quiet).
func (c *console) errorLine(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeLocked("research: " + msg + "\n")
}

func (c *console) writeLocked(s string) {
	c.clearLocked()
	_, _ = io.WriteString(c.w, c.redactLocked(s))
	if c.stopCh != nil {
		c.drawLocked()
	}
}

// Write makes the console the slog handler's writer.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeLocked(cleanText(string(p)))
	return len(p), nil
}

// oneLine makes untrusted text safe and short for one terminal line (see
// app.OneLine).
func oneLine(s string, max int) string { return app.OneLine(s, max) }

// cleanText removes control characters other than newlines and tabs from
// text bound for a terminal or a file (see app.CleanText).
func cleanText(s string) string { return app.CleanText(s) }
