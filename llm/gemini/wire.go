package gemini

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// The JSON of the Gemini API's generateContent and streamGenerateContent
// methods (v1beta), as far as this package sends or reads it. Field names
// are the API's camelCase; []byte fields travel as base64, as the API's
// bytes fields do. Replies are untrusted: every field may be missing.

// generateRequest is a GenerateContentRequest body.
type generateRequest struct {
	Contents          []*wireContent      `json:"contents"`
	SystemInstruction *wireContent        `json:"systemInstruction,omitempty"`
	Tools             []*wireTool         `json:"tools,omitempty"`
	ToolConfig        *wireToolConfig     `json:"toolConfig,omitempty"`
	GenerationConfig  *wireGenerationConf `json:"generationConfig,omitempty"`
}

// Roles of contents.
const (
	roleUser  = "user"
	roleModel = "model"
)

type wireContent struct {
	Role  string      `json:"role,omitempty"`
	Parts []*wirePart `json:"parts"`
}

// wirePart is one part of a content. The kinds this package never sends but
// may receive (files, code, server-side tool calls) are kept as raw JSON
// only to tell text parts from the others.
type wirePart struct {
	Text             string                `json:"text,omitempty"`
	Thought          bool                  `json:"thought,omitempty"`
	ThoughtSignature []byte                `json:"thoughtSignature,omitempty"`
	InlineData       *wireBlob             `json:"inlineData,omitempty"`
	FunctionCall     *wireFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *wireFunctionResponse `json:"functionResponse,omitempty"`

	FileData            json.RawMessage `json:"fileData,omitempty"`
	ExecutableCode      json.RawMessage `json:"executableCode,omitempty"`
	CodeExecutionResult json.RawMessage `json:"codeExecutionResult,omitempty"`
	ToolCall            json.RawMessage `json:"toolCall,omitempty"`
	ToolResponse        json.RawMessage `json:"toolResponse,omitempty"`
}

type wireBlob struct {
	MIMEType string `json:"mimeType"`
	Data     []byte `json:"data"`
}

// wireFunctionCall's Args is a JSON object; omitted when empty.
type wireFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type wireFunctionResponse struct {
	ID       string             `json:"id,omitempty"`
	Name     string             `json:"name"`
	Response wireFunctionOutput `json:"response"`
}

// wireFunctionOutput is the response object of a tool result: its content,
// under "output", as the API's documentation suggests.
type wireFunctionOutput struct {
	Output string `json:"output"`
}

type wireTool struct {
	FunctionDeclarations []*wireFunctionDecl `json:"functionDeclarations,omitempty"`
	GoogleSearch         *struct{}           `json:"googleSearch,omitempty"`
}

// wireFunctionDecl's ParametersJSONSchema is plain JSON Schema (the
// parametersJsonSchema field), not the OpenAPI subset of "parameters".
type wireFunctionDecl struct {
	Name                 string             `json:"name"`
	Description          string             `json:"description,omitempty"`
	ParametersJSONSchema *jsonschema.Schema `json:"parametersJsonSchema,omitempty"`
}

type wireToolConfig struct {
	FunctionCallingConfig *wireFunctionCallingConfig `json:"functionCallingConfig,omitempty"`
}

// Function calling modes.
const (
	modeAuto = "AUTO"
	modeAny  = "ANY"
	modeNone = "NONE"
)

type wireFunctionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type wireGenerationConf struct {
	Temperature        *float64            `json:"temperature,omitempty"`
	MaxOutputTokens    int                 `json:"maxOutputTokens,omitempty"`
	StopSequences      []string            `json:"stopSequences,omitempty"`
	ResponseMIMEType   string              `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage     `json:"responseJsonSchema,omitempty"` // llm.SchemaJSON of the request's schema
	ThinkingConfig     *wireThinkingConfig `json:"thinkingConfig,omitempty"`
}

type wireThinkingConfig struct {
	IncludeThoughts bool `json:"includeThoughts,omitempty"`
}

// wireResponse is a GenerateContentResponse: a unary reply, or one chunk of
// a stream. Error is set instead when a stream carries an error event.
type wireResponse struct {
	Candidates     []*wireCandidate    `json:"candidates"`
	PromptFeedback *wirePromptFeedback `json:"promptFeedback"`
	UsageMetadata  *wireUsage          `json:"usageMetadata"`
	ModelVersion   string              `json:"modelVersion"`
	ResponseID     string              `json:"responseId"`
	Error          *wireError          `json:"error"`
}

type wireCandidate struct {
	Content           *wireContent   `json:"content"`
	FinishReason      string         `json:"finishReason"`
	FinishMessage     string         `json:"finishMessage"`
	GroundingMetadata *wireGrounding `json:"groundingMetadata"`
}

type wirePromptFeedback struct {
	BlockReason string `json:"blockReason"`
}

type wireUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
}

type wireGrounding struct {
	WebSearchQueries  []string                `json:"webSearchQueries"`
	GroundingChunks   []*wireGroundingChunk   `json:"groundingChunks"`
	GroundingSupports []*wireGroundingSupport `json:"groundingSupports"`
	SearchEntryPoint  *wireSearchEntryPoint   `json:"searchEntryPoint"`
}

type wireGroundingChunk struct {
	Web *wireWebChunk `json:"web"`
}

type wireWebChunk struct {
	URI   string `json:"uri"`
	Title string `json:"title"`
}

type wireGroundingSupport struct {
	Segment               *wireSegment `json:"segment"`
	GroundingChunkIndices []int        `json:"groundingChunkIndices"`
	ConfidenceScores      []float64    `json:"confidenceScores"`
}

// wireSegment's offsets are UTF-8 byte offsets into the part PartIndex
// counts; omitted values are 0.
type wireSegment struct {
	PartIndex  int    `json:"partIndex"`
	StartIndex int    `json:"startIndex"`
	EndIndex   int    `json:"endIndex"`
	Text       string `json:"text"`
}

type wireSearchEntryPoint struct {
	RenderedContent string `json:"renderedContent"`
}

// wireError is the API's error object (google.rpc.Status as JSON), the
// "error" member of an error reply or stream event.
type wireError struct {
	Code    int               `json:"code"`
	Message string            `json:"message"`
	Status  string            `json:"status"`
	Details []wireErrorDetail `json:"details"`
}

// wireErrorDetail holds the fields of the detail types this package reads:
// google.rpc.ErrorInfo (reason) and google.rpc.RetryInfo (retryDelay).
type wireErrorDetail struct {
	Type       string `json:"@type"`
	Reason     string `json:"reason"`
	RetryDelay string `json:"retryDelay"`
}
