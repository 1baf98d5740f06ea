package llm

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaInstructions is the text a provider without a native structured-output
// mode appends to the conversation (with its JSON mode on, where it has one) to
// ask for a reply matching s.
func SchemaInstructions(name string, s *jsonschema.Schema) string {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		data = []byte("{}")
	}
	if name == "" {
		name = "response"
	}
	return fmt.Sprintf("Reply with one JSON object (%s) and nothing else: no prose, no code fences. "+
		"It must validate against this JSON Schema:\n%s", name, data)
}
