package sdkwire

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testKey = "test-key-0123456789abcdef"

// testDecode reads {"message", "code"} error objects, a code being the
// status.
func testDecode(raw json.RawMessage) (string, int, bool) {
	var o struct {
		Message string `json:"message"`
		Code    int    `json:"code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return "", 0, false
	}
	return o.Message, o.Code, true
}

func TestClean(t *testing.T) {
	tests := []struct{ name, in, key, want string }{
		{"OpenAI project key, partly starred", "Incorrect API key provided: sk-proj-abcdEFGH1234****wxyz.", "", "Incorrect API key provided: sk-proj-[redacted]."},
		{"Anthropic key", "bad key sk-ant-api03-abcdefghijk", "", "bad key sk-ant-[redacted]"},
		{"plain sk key", "key sk-abcdef123456 rejected", "", "key sk-[redacted] rejected"},
		{"too short to be a key", "sk-abc is fine", "", "sk-abc is fine"},
		{"the configured key", "key=secret-token-value here", "secret-token-value", "key=[redacted] here"},
		{"the configured key, twice", "k=my-secret-key,my-secret-key", "my-secret-key", "k=[redacted],[redacted]"},
		{"a key under 6 bytes is not searched for", "abc def", "abc", "abc def"},
		{"control characters", "line1\nline2\x1b[31m", "", "line1 line2 [31m"},
		{"surrounding space", "  \t msg \r\n", "", "msg"},
		{"long text cut at a rune boundary", strings.Repeat("é", 500), "", strings.Repeat("é", 400) + "…"},
		{"exactly the limit", strings.Repeat("a", maxClean), "", strings.Repeat("a", maxClean)},
		{"one over the limit", strings.Repeat("a", maxClean+1), "", strings.Repeat("a", maxClean) + "…"},
		{"empty", "", testKey, ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Clean(tt.in, tt.key), tt.name)
	}
}

func TestParseError(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		want   bool
		msg    string
		status int
	}{
		{"absent", ``, false, "", 0},
		{"null", ` null `, false, "", 0},
		{"a string", `"quota exceeded"`, true, "quota exceeded", 0},
		{"an object", `{"message":"slow down","code":429}`, true, "slow down", 429},
		{"an object without a message", `{"code":500}`, true, "", 500},
		{"not an object the decoder reads", `[1,2]`, true, "[1,2]", 0},
		{"a number", ` 42`, true, "42", 0},
	}
	for _, tt := range tests {
		e := ParseError(json.RawMessage(tt.raw), testDecode)
		if !tt.want {
			assert.Nil(t, e, tt.name)
			continue
		}
		require.NotNil(t, e, tt.name)
		assert.Equal(t, tt.msg, e.Msg, tt.name)
		assert.Equal(t, tt.msg, e.Error(), tt.name)
		assert.Equal(t, tt.status, e.Status, tt.name)
		assert.ErrorIs(t, e, ErrStreamError, tt.name)
	}
}

func TestErrorMessage(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"error":{"message":"m1","code":400}}`, "m1"},
		{`{"error":"m2"}`, "m2"},
		{`{"error":{"code":500},"message":"m3"}`, "m3"},
		{`{"object":"error","message":"m4"}`, "m4"},
		{`{"detail":"m5"}`, "m5"},
		{`{"detail":[{"loc":["body"],"msg":"field required"}]}`, `[{"loc":["body"],"msg":"field required"}]`},
		{`{"detail":null}`, `{"detail":null}`},
		{`{"error":null,"message":""}`, `{"error":null,"message":""}`},
		{"plain text\n", "plain text"},
		{"<html>x</html>", ""},
		{"  <!doctype html>", ""},
		{"", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ErrorMessage([]byte(tt.body), testDecode), tt.body)
	}
}

// FuzzErrorText checks that error bodies become bounded, printable, valid
// text without the key.
func FuzzErrorText(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"Incorrect API key provided: sk-abcdef123456"}}`))
	f.Add([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-abcdef123456"}}`))
	f.Add([]byte(`{"error":"x","detail":{"a":1}}`))
	f.Add([]byte(`{"message":"echo ` + testKey + `"}`))
	f.Add([]byte("\x1b[2J<html>"))
	f.Fuzz(func(t *testing.T, body []byte) {
		msg := Clean(ErrorMessage(body, testDecode), testKey)
		if len(msg) > maxClean+len("…") {
			t.Fatalf("message not bounded: %d bytes", len(msg))
		}
		if utf8.Valid(body) && !utf8.ValidString(msg) {
			t.Fatalf("invalid UTF-8 from valid input: %q", msg)
		}
		if strings.Contains(msg, testKey) {
			t.Fatalf("the key survived: %q", msg)
		}
		for _, r := range msg {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character in %q", msg)
			}
		}
	})
}
