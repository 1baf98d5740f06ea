package sdkwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"

	"github.com/deepgraph/deepgraph/internal/httpx"
	"github.com/deepgraph/deepgraph/llm"
)

// Errors a ReplyError wraps, for the conditions every provider shares.
var (
	// ErrMalformed is a reply that cannot be read: not JSON where JSON was
	// due, missing what every reply has.
	ErrMalformed = errors.New("malformed reply")
	// ErrStreamError is an error object inside a reply whose HTTP status
	// was 200.
	ErrStreamError = errors.New("error event in the reply")
	// ErrNotStream is a JSON reply to a request for an event stream.
	ErrNotStream = errors.New("reply is not an event stream")
)

// ReplyError is a reply that cannot be used although the HTTP status was
// 200: an error object in the body or stream, a stream cut short, a body
// that does not parse. Its text is Msg alone, shown to users after Clean.
type ReplyError struct {
	// Status is the HTTP status the error object names or stands for; 0
	// when none.
	Status int
	// Msg says what went wrong.
	Msg string
	// Err is the condition: ErrMalformed, ErrStreamError, ErrNotStream, a
	// provider's own sentinel, or a read error.
	Err error
}

func (e *ReplyError) Error() string { return e.Msg }

// Unwrap returns Err.
func (e *ReplyError) Unwrap() error { return e.Err }

// DecodeError reads the object form of an API's "error" member: its message
// and the HTTP status it stands for (0 when none). ok is false when raw is
// not an object of that form.
type DecodeError func(raw json.RawMessage) (msg string, status int, ok bool)

// ParseError reads an "error" member: nil when it is absent or null; a JSON
// string is the message; an object is read by decode, and anything decode
// cannot read is kept as its JSON text. The result wraps ErrStreamError.
func ParseError(raw json.RawMessage, decode DecodeError) *ReplyError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	e := &ReplyError{Err: ErrStreamError}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		e.Msg = s
		return e
	}
	msg, status, ok := decode(raw)
	if !ok {
		e.Msg = string(raw)
		return e
	}
	e.Msg, e.Status = msg, status
	return e
}

// Broken is the ReplyError of an event stream cut short after its 200: the
// body ended, or the connection dropped, before the API's final event. It
// matches llm.ErrStreamBroken (so llm.CallModel sends the call again) and
// cause.
func Broken(msg string, cause error) *ReplyError {
	return &ReplyError{Msg: msg, Err: fmt.Errorf("%w: %w", llm.ErrStreamBroken, cause)}
}

// StreamEnded is the ReplyError for an event stream whose reading stopped
// with readErr before the final event: Broken, unless the reply itself was
// at fault (readErr matches ErrMalformed).
func StreamEnded(readErr error) *ReplyError {
	msg := "the event stream broke off: " + readErr.Error()
	if errors.Is(readErr, ErrMalformed) {
		return &ReplyError{Msg: msg, Err: readErr}
	}
	return Broken(msg, readErr)
}

// StreamError is ParseError for an error event inside an event stream. One
// whose status says the server was overloaded, failing or rate limited (429,
// 5xx, Anthropic's 529) ended the stream early through no fault of the
// request, so it also matches llm.ErrStreamBroken; a refusal (4xx) does not.
func StreamError(raw json.RawMessage, decode DecodeError) *ReplyError {
	e := ParseError(raw, decode)
	if e != nil && httpx.RetryableStatus(e.Status) {
		e.Err = fmt.Errorf("%w: %w", ErrStreamError, llm.ErrStreamBroken)
	}
	return e
}

// ErrorMessage finds the human-readable message in an error reply's body:
// the "error" member read as ParseError does, else a top-level "message"
// (vLLM and others), else "detail" (a string, or its JSON text), else the
// body itself unless it is HTML. The result is not yet cleaned.
func ErrorMessage(body []byte, decode DecodeError) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		if e := ParseError(v.Error, decode); e != nil && e.Msg != "" {
			return e.Msg
		}
		if v.Message != "" {
			return v.Message
		}
		var d string
		if json.Unmarshal(v.Detail, &d) == nil && d != "" {
			return d
		}
		if len(v.Detail) > 0 && string(v.Detail) != "null" {
			return string(v.Detail)
		}
	}
	text := strings.TrimSpace(string(body))
	if strings.HasPrefix(text, "<") {
		return ""
	}
	return text
}

// keyPattern matches OpenAI- and Anthropic-style keys (sk-…, sk-proj-…,
// sk-ant-…, also when partly starred out), keeping the prefix.
var keyPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(sk-(?:proj-|ant-)?)[A-Za-z0-9_\-*]{6,}`) })

// maxClean bounds a cleaned text, in bytes before the ellipsis.
const maxClean = 800

// Clean makes server or library text safe to show: key (when 6 bytes or
// longer) and anything shaped like an API key are masked, control
// characters become spaces, surrounding space is trimmed, and the length is
// bounded at a rune boundary with "…" marking the cut.
func Clean(s, key string) string {
	if len(key) >= 6 {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	s = keyPattern().ReplaceAllString(s, "$1[redacted]")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > maxClean {
		cut := maxClean
		for cut > 0 && !runeStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }
