package schemas

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// Role is the author of a Message.
type Role string

// The roles of a conversation.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	Tool      Role = "tool" // the result of a tool call, answering ToolCallID
)

// Message is one turn of a conversation, in a provider-neutral form.
//
// An assistant message may carry ToolCalls; each call is answered by a Tool
// message whose ToolCallID names it.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a Tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a Tool message (some providers require it).
	Name string `json:"name,omitempty"`
	// Images are attached pictures (tool screenshots, user uploads). Providers
	// that cannot take images ignore them.
	Images []Image `json:"images,omitempty"`
	// Transient says the message is shown for this call only — a
	// browser's current page, a prompt's per-call instructions — so that
	// no later call resends a prompt prefix that ends in it: providers that
	// cache prompts at explicit breakpoints (Anthropic, see llm.CachePrompt)
	// end the cached prefix before it. Transient messages come last.
	Transient bool `json:"transient,omitempty"`
}

// Image is a picture attached to a message.
type Image struct {
	MIMEType string `json:"mime_type"` // e.g. image/png
	Data     []byte `json:"data"`      // raw bytes (base64 in JSON)
}

// SystemMessage, UserMessage and AssistantMessage build text messages.
func SystemMessage(text string) Message    { return Message{Role: System, Content: text} }
func UserMessage(text string) Message      { return Message{Role: User, Content: text} }
func AssistantMessage(text string) Message { return Message{Role: Assistant, Content: text} }

// ToolResultMessage builds the Tool message answering call.
func ToolResultMessage(call ToolCall, content string) Message {
	return Message{Role: Tool, ToolCallID: call.ID, Name: call.Name, Content: content}
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	// ID identifies the call; the matching Tool message repeats it. Providers
	// that do not assign IDs get one generated, so it is never empty.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON object the model produced. It is untrusted: it may
	// be malformed or not match the tool's schema.
	Arguments json.RawMessage `json:"arguments"`
	// Signature is an opaque token some providers attach to a call and require
	// back with it in later turns (Gemini's thought signatures). Keep it as is.
	Signature []byte `json:"signature,omitempty"`
}

// ToolDef describes a tool to a model.
type ToolDef struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments object. Nil means the tool
	// takes no arguments.
	Parameters *jsonschema.Schema `json:"parameters,omitempty"`
}
