package wiretap

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunks is a body delivered in the given pieces, then err (io.EOF when
// nil).
type chunks struct {
	parts  []string
	err    error
	closed bool
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		if c.err == nil {
			return 0, io.EOF
		}
		return 0, c.err
	}
	n := copy(p, c.parts[0])
	if c.parts[0] = c.parts[0][n:]; c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

func (c *chunks) Close() error { c.closed = true; return nil }

// tapRecord is what a LineTap's callbacks saw.
type tapRecord struct {
	lines []string
	ends  []error
}

var (
	errStop   = errors.New("stop here")
	errCut    = errors.New("cut short")
	errBroken = errors.New("connection reset")
)

func TestLineTap(t *testing.T) {
	long := "data: " + strings.Repeat("x", MaxPassLine)
	tests := []struct {
		name      string
		body      []string
		readErr   error
		drop      string // a line the tap is told not to pass on
		stopAt    string // a line whose inspection stops the stream
		endErr    error  // what end returns for a clean end of the body
		wantLines []string
		wantOut   string
		wantErr   error
		wantEnds  int
	}{
		{
			name: "lines pass after inspection", body: []string{"event: a\ndata: 1\n\ndata: 2\n"}, endErr: io.EOF,
			wantLines: []string{"event: a", "data: 1", "", "data: 2"}, wantOut: "event: a\ndata: 1\n\ndata: 2\n", wantErr: io.EOF, wantEnds: 1,
		},
		{
			name: "lines split across reads, CRLF endings", body: []string{"data: a", "bc\r", "\ndata:", " d\r\n"}, endErr: io.EOF,
			wantLines: []string{"data: abc", "data: d"}, wantOut: "data: abc\ndata: d\n", wantErr: io.EOF, wantEnds: 1,
		},
		{
			name: "a last line without a newline", body: []string{"data: 1\ndata: [DONE]"}, endErr: io.EOF,
			wantLines: []string{"data: 1", "data: [DONE]"}, wantOut: "data: 1\ndata: [DONE]\n", wantErr: io.EOF, wantEnds: 1,
		},
		{
			name: "a dropped line is inspected only", body: []string{"data: 1\nevent: odd\ndata: 2\n"}, drop: "event: odd", endErr: io.EOF,
			wantLines: []string{"data: 1", "event: odd", "data: 2"}, wantOut: "data: 1\ndata: 2\n", wantErr: io.EOF, wantEnds: 1,
		},
		{
			name: "a line too long for langchaingo is inspected only", body: []string{"data: 1\n", long[:20000], long[20000:] + "\ndata: 2\n"}, endErr: io.EOF,
			wantLines: []string{"data: 1", long, "data: 2"}, wantOut: "data: 1\ndata: 2\n", wantErr: io.EOF, wantEnds: 1,
		},
		{
			name: "an inspection error stops the stream", body: []string{"data: 1\ndata: bad\ndata: 3\n"}, stopAt: "data: bad", endErr: io.EOF,
			wantLines: []string{"data: 1", "data: bad"}, wantOut: "data: 1\ndata: bad\n", wantErr: errStop, wantEnds: 0,
		},
		{
			name: "end decides a premature end", body: []string{"data: 1\n"}, endErr: errCut,
			wantLines: []string{"data: 1"}, wantOut: "data: 1\n", wantErr: errCut, wantEnds: 1,
		},
		{
			name: "end taking nil for a clean end means io.EOF", body: []string{"data: 1\n"}, endErr: nil,
			wantLines: []string{"data: 1"}, wantOut: "data: 1\n", wantErr: io.EOF, wantEnds: 1,
		},
		{
			name: "a read error goes to end", body: []string{"data: 1\ndata: 2"}, readErr: errBroken,
			wantLines: []string{"data: 1"}, wantOut: "data: 1\n", wantErr: errBroken, wantEnds: 1,
		},
		{
			name: "an empty body", body: nil, endErr: errCut,
			wantOut: "", wantErr: errCut, wantEnds: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec tapRecord
			src := &chunks{parts: append([]string(nil), tt.body...), err: tt.readErr}
			tap := NewLineTap(src,
				func(line []byte) (bool, error) {
					rec.lines = append(rec.lines, string(line))
					switch {
					case tt.drop != "" && string(line) == tt.drop:
						return false, nil
					case tt.stopAt != "" && string(line) == tt.stopAt:
						return true, errStop
					}
					return true, nil
				},
				func(readErr error) error {
					rec.ends = append(rec.ends, readErr)
					if readErr != nil {
						return readErr
					}
					return tt.endErr
				})
			out, err := readAllKeepErr(iotest.OneByteReader(tap))
			assert.Equal(t, tt.wantOut, string(out))
			assert.ErrorIs(t, err, tt.wantErr)
			assert.Equal(t, tt.wantLines, rec.lines)
			assert.Len(t, rec.ends, tt.wantEnds)
			if tt.readErr != nil {
				require.Len(t, rec.ends, 1)
				assert.ErrorIs(t, rec.ends[0], tt.readErr)
			}
			// The verdict stays.
			n, again := tap.Read(make([]byte, 8))
			assert.Zero(t, n)
			assert.ErrorIs(t, again, tt.wantErr)
			require.NoError(t, tap.Close())
			assert.True(t, src.closed)
		})
	}
}

// readAllKeepErr is io.ReadAll that also returns io.EOF, so tests can tell
// a clean end from others.
func readAllKeepErr(r io.Reader) ([]byte, error) {
	var out []byte
	buf := make([]byte, 512)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
	}
}

func TestLineTapLineOverLimit(t *testing.T) {
	huge := strings.Repeat("y", MaxSSELine+1)
	var ends []error
	tap := NewLineTap(io.NopCloser(strings.NewReader("data: ok\n"+huge)),
		func([]byte) (bool, error) { return true, nil },
		func(readErr error) error { ends = append(ends, readErr); return errCut })
	out, err := readAllKeepErr(tap)
	assert.Equal(t, "data: ok\n", string(out))
	assert.ErrorIs(t, err, errCut)
	require.Len(t, ends, 1)
	require.Error(t, ends[0])
	assert.Contains(t, ends[0].Error(), "longer than 8 MiB")
}

func TestSSEData(t *testing.T) {
	tests := []struct {
		line string
		want string
		ok   bool
	}{
		{`data: {"a":1}`, `{"a":1}`, true},
		{`data:[DONE]`, `[DONE]`, true},
		{"data:  x \t", "x", true},
		{"data:", "", true},
		{"event: message_start", "", false},
		{": comment", "", false},
		{" data: x", "", false},
	}
	for _, tt := range tests {
		got, ok := SSEData([]byte(tt.line))
		assert.Equal(t, tt.ok, ok, tt.line)
		assert.Equal(t, tt.want, string(got), tt.line)
	}
}

// FuzzLineTap feeds arbitrary bodies in arbitrary pieces: every line
// inspected is a line of the body, what is passed on is exactly the
// inspected lines shorter than MaxPassLine, and the stream ends with end's
// verdict.
func FuzzLineTap(f *testing.F) {
	f.Add("data: 1\n\ndata: [DONE]\n", uint8(3))
	f.Add("a\r\nb\rc\n\r\n", uint8(1))
	f.Add("no newline at all", uint8(0))
	f.Add("\n\n\n", uint8(7))
	f.Fuzz(func(t *testing.T, body string, step uint8) {
		var parts []string
		size := int(step%16) + 1
		for rest := body; rest != ""; {
			n := min(size, len(rest))
			parts, rest = append(parts, rest[:n]), rest[n:]
		}
		var inspected []string
		tap := NewLineTap(&chunks{parts: parts},
			func(line []byte) (bool, error) { inspected = append(inspected, string(line)); return true, nil },
			func(error) error { return errCut })
		out, err := readAllKeepErr(tap)
		if !errors.Is(err, errCut) {
			t.Fatalf("ended with %v, not end's verdict", err)
		}
		want := strings.Split(body, "\n")
		if strings.HasSuffix(body, "\n") || body == "" {
			want = want[:len(want)-1]
		}
		for i := range want {
			want[i] = strings.TrimSuffix(want[i], "\r")
		}
		if len(inspected) != len(want) {
			t.Fatalf("inspected %d lines, the body has %d", len(inspected), len(want))
		}
		var passed strings.Builder
		for i, line := range inspected {
			if line != want[i] {
				t.Fatalf("line %d: inspected %q, body has %q", i, line, want[i])
			}
			passed.WriteString(line + "\n")
		}
		if string(out) != passed.String() {
			t.Fatalf("passed on %q, want %q", out, passed.String())
		}
	})
}
