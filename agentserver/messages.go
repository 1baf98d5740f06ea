package agentserver

import (
	"encoding/json"
	"fmt"
)

// Message is a chat message as LangChain's clients send and show it — the
// dicts of a state's "messages" key: {type, content, id, tool_calls,
// tool_call_id, name}. Type is "human", "ai", "tool" or "system" (the
// clients' "AIMessageChunk" is read as "ai", "user" as "human").
//
// A state that keeps its conversation as []Message under the JSON key
// "messages", with AddMessages as its reducer, is what Agent Chat UI and
// useStream render:
//
//	var msgs = graph.Reduce(func(s *State) *[]agentserver.Message { return &s.Messages }, agentserver.AddMessages)
type Message struct {
	Type string `json:"type"`
	// Content is the text. Clients may send a list of content blocks
	// ([{type:"text", text}, …]); Content keeps their text parts.
	Content string `json:"content"`
	ID      string `json:"id,omitempty"`
	// Name is a tool message's tool, or a participant's name.
	Name string `json:"name,omitempty"`
	// ToolCalls are the calls an ai message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is a tool call of an ai message: {name, args, id, type:"tool_call"}.
type ToolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	ID   string          `json:"id"`
}

// MarshalJSON writes the call with type "tool_call" and args as an object.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return json.Marshal(struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
		ID   string          `json:"id"`
		Type string          `json:"type"`
	}{c.Name, args, c.ID, "tool_call"})
}

// The message types.
const (
	MessageHuman  = "human"
	MessageAI     = "ai"
	MessageTool   = "tool"
	MessageSystem = "system"
)

// UnmarshalJSON reads a message as clients send it: content as a string or
// as content blocks, the type in LangChain's spellings.
func (m *Message) UnmarshalJSON(data []byte) error {
	var raw struct {
		Type       string          `json:"type"`
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ID         string          `json:"id"`
		Name       string          `json:"name"`
		ToolCalls  []ToolCall      `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	typ := raw.Type
	if typ == "" {
		typ = raw.Role
	}
	switch typ {
	case "human", "user", "HumanMessage", "HumanMessageChunk":
		typ = MessageHuman
	case "ai", "assistant", "AIMessage", "AIMessageChunk":
		typ = MessageAI
	case "tool", "ToolMessage", "ToolMessageChunk":
		typ = MessageTool
	case "system", "SystemMessage":
		typ = MessageSystem
	default:
		return fmt.Errorf("message type %q: use human, ai, tool or system", typ)
	}
	text, err := contentText(raw.Content)
	if err != nil {
		return err
	}
	*m = Message{Type: typ, Content: text, ID: raw.ID, Name: raw.Name, ToolCalls: raw.ToolCalls, ToolCallID: raw.ToolCallID}
	return nil
}

// contentText is a message's text: a string, or the text of its blocks.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", fmt.Errorf("message content is neither a string nor a list of content blocks: %w", err)
	}
	var out string
	for _, b := range blocks {
		if b.Type == "text" {
			out += b.Text
		}
	}
	return out, nil
}

// AddMessages is LangGraph's add_messages reducer: each message of upd
// replaces the message of cur with the same ID, or is appended. Messages
// without an ID are appended. A client that sends a conversation again
// (Agent Chat UI re-sends tool messages) does not duplicate it.
func AddMessages(cur, upd []Message) []Message {
	out := make([]Message, len(cur), len(cur)+len(upd))
	copy(out, cur)
	index := make(map[string]int, len(out))
	for i, m := range out {
		if m.ID != "" {
			index[m.ID] = i
		}
	}
	for _, m := range upd {
		if i, ok := index[m.ID]; ok && m.ID != "" {
			out[i] = m
			continue
		}
		if m.ID != "" {
			index[m.ID] = len(out)
		}
		out = append(out, m)
	}
	return out
}

// MessageChunk is a piece of a message being written, as a node emits it
// (graph.Emit) for the messages-tuple stream mode: clients append the
// chunks of one ID and then take the message of the same ID in the state's
// values in their place, so give the chunks the ID of the message the node
// writes.
type MessageChunk struct {
	ID      string
	Content string
	// Restart says the stream broke off and is written again: clients drop
	// what they have of the message.
	Restart bool
}
