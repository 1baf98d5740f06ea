package wiretap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Limits on what is buffered from a server.
const (
	// MaxErrorBody bounds the body of an error reply that is kept.
	MaxErrorBody = 1 << 20
	// MaxReplyBody bounds a non-streamed reply.
	MaxReplyBody = 64 << 20
	// MaxSSELine bounds one line of an event stream.
	MaxSSELine = 8 << 20
	// MaxPassLine is the longest line a LineTap passes on. langchaingo's
	// scanner (bufio.MaxScanTokenSize, 64 KiB) would end the stream with
	// "token too long" on a longer one.
	MaxPassLine = 32 << 10
)

// readChunk is how much a LineTap asks its source for at a time.
const readChunk = 32 << 10

// LineTap sits between an event-stream body and langchaingo's line scanner.
// It passes whole lines on only after line has inspected them (line may drop
// a line, or stop the stream with an error), and at the end of the body asks
// end which error the reader should see: io.EOF for a complete stream, a
// descriptive error for one cut short.
//
// Lines are split at '\n' with a trailing '\r' removed; a last line without
// a newline is inspected too, and if line finds it malformed, end gets
// io.ErrUnexpectedEOF: the body was cut inside that line. Lines of
// MaxPassLine bytes or more are inspected but not passed on: the provider assembles the reply from what it
// saw. A line over MaxSSELine ends the stream with end's verdict on that.
//
// A LineTap is read by one goroutine at a time, like any io.Reader.
type LineTap struct {
	src  io.ReadCloser
	line func([]byte) (keep bool, err error)
	end  func(readErr error) error

	chunk []byte // read buffer, reused
	buf   []byte // read, not yet split into lines
	out   []byte // inspected, not yet returned
	err   error  // returned once out is drained
}

// NewLineTap returns a LineTap reading src. line gets each line without its
// line ending; the slice is valid only during the call. A non-nil error from
// line stops the stream: the reader gets it after the lines already passed
// on (the line itself is still passed on if keep is true). end gets nil at
// the end of src, or the read error or over-long-line error that stopped it,
// and returns what the reader sees from then on; a nil return is taken as
// io.EOF.
func NewLineTap(src io.ReadCloser, line func([]byte) (keep bool, err error), end func(readErr error) error) *LineTap {
	return &LineTap{src: src, line: line, end: end}
}

// Read returns inspected lines, each followed by '\n'.
func (t *LineTap) Read(p []byte) (int, error) {
	for len(t.out) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		t.fill()
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

// Close closes the source.
func (t *LineTap) Close() error { return t.src.Close() }

func (t *LineTap) fill() {
	if t.chunk == nil {
		t.chunk = make([]byte, readChunk)
	}
	n, rerr := t.src.Read(t.chunk)
	t.buf = append(t.buf, t.chunk[:n]...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		line := t.buf[:i]
		t.buf = t.buf[i+1:]
		if !t.emit(line) {
			return
		}
	}
	if len(t.buf) > MaxSSELine {
		t.finish(fmt.Errorf("an event-stream line is longer than %d MiB: %w", MaxSSELine>>20, ErrMalformed))
		return
	}
	switch {
	case rerr == io.EOF:
		if len(t.buf) > 0 {
			last := t.buf
			t.buf = nil
			if !t.emitLast(last) {
				return
			}
		}
		t.finish(nil)
	case rerr != nil:
		t.finish(rerr)
	}
}

// finish records end's verdict on how the body ended.
func (t *LineTap) finish(readErr error) {
	t.err = t.end(readErr)
	if t.err == nil {
		t.err = io.EOF
	}
}

// emitLast inspects a last line that no newline ended. One that line finds
// malformed (ErrMalformed) was most likely cut off with the body — a JSON
// event half sent — so end rules on it as on a body cut short:
// io.ErrUnexpectedEOF.
func (t *LineTap) emitLast(line []byte) bool {
	if err := t.inspect(line); err != nil {
		if errors.Is(err, ErrMalformed) {
			t.finish(io.ErrUnexpectedEOF)
		} else {
			t.err = err
		}
		return false
	}
	return true
}

// emit inspects one line and queues it; false means the stream is over.
func (t *LineTap) emit(line []byte) bool {
	if err := t.inspect(line); err != nil {
		t.err = err
		return false
	}
	return true
}

// inspect shows line to the provider and queues it if kept.
func (t *LineTap) inspect(line []byte) error {
	line = bytes.TrimSuffix(line, []byte("\r"))
	keep, err := t.line(line)
	if keep && len(line) < MaxPassLine {
		t.out = append(t.out, line...)
		t.out = append(t.out, '\n')
	}
	return err
}

// SSEData returns the payload of a "data:" line, trimmed; false for any
// other line.
func SSEData(line []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil, false
	}
	return bytes.TrimSpace(rest), true
}
