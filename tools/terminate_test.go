package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/schemas"
)

func TestTerminate(t *testing.T) {
	tests := []struct {
		name    string
		call    schemas.ToolCall
		want    Termination
		wantErr string
	}{
		{name: "success", call: call(TerminateName, `{"status":"success","answer":"42"}`), want: Termination{Status: TerminateSuccess, Answer: "42"}},
		{name: "failure with reason", call: call(TerminateName, `{"status":"failure","answer":"no sources"}`), want: Termination{Status: TerminateFailure, Answer: "no sources"}},
		{name: "failure with empty answer", call: call(TerminateName, `{"status":"failure","answer":""}`), want: Termination{Status: TerminateFailure}},
		{name: "success needs an answer", call: call(TerminateName, `{"status":"success","answer":"  "}`), wantErr: "status success needs the final answer"},
		{name: "missing answer", call: call(TerminateName, `{"status":"success"}`), wantErr: `missing properties: ["answer"]`},
		{name: "bad status", call: call(TerminateName, `{"status":"done","answer":"x"}`), wantErr: `property "status": enum`},
		{name: "malformed", call: call(TerminateName, `{"status":`), wantErr: "not valid JSON"},
		{name: "another tool", call: call("bash", `{"status":"success","answer":"x"}`), wantErr: "is not a terminate call"},
	}
	tool := NewTerminate()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTerminate(tt.call)
			res, runErr := tool.Run(context.Background(), tt.call.Arguments)
			require.NoError(t, runErr)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				if IsTerminate(tt.call) {
					assert.Contains(t, res.Error, tt.wantErr, "the tool shows the model the same problem")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.True(t, IsTerminate(tt.call))
			assert.False(t, res.Failed(), res.Error)
			assert.Contains(t, res.Output, string(tt.want.Status))
		})
	}
	assert.Equal(t, []any{"success", "failure"}, tool.Parameters().Properties["status"].Enum)
	assert.False(t, IsTerminate(schemas.ToolCall{Name: "terminate_now", Arguments: json.RawMessage(`{}`)}))
}
