package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// The OpenAPI 3.1 document is built from the route table and the Go types
// of the bodies (their JSON Schemas, draft 2020-12 as OpenAPI 3.1 uses), so
// it says what the handlers do.

// openAPIDoc is an OpenAPI document; its parts are typed below.
type openAPIDoc struct {
	OpenAPI    string                          `json:"openapi"`
	Info       openAPIInfo                     `json:"info"`
	Paths      map[string]map[string]operation `json:"paths"`
	Components components                      `json:"components"`
	Security   []map[string][]string           `json:"security,omitempty"`
}

type openAPIInfo struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description"`
}

type operation struct {
	OperationID string              `json:"operationId"`
	Summary     string              `json:"summary"`
	Parameters  []parameter         `json:"parameters,omitempty"`
	RequestBody *requestBody        `json:"requestBody,omitempty"`
	Responses   map[string]response `json:"responses"`
	// Security is empty for the routes open without a token.
	Security *[]map[string][]string `json:"security,omitempty"`
}

type parameter struct {
	Name        string             `json:"name"`
	In          string             `json:"in"`
	Required    bool               `json:"required,omitempty"`
	Description string             `json:"description,omitempty"`
	Schema      *jsonschema.Schema `json:"schema"`
}

type requestBody struct {
	Required bool                 `json:"required"`
	Content  map[string]mediaType `json:"content"`
}

type response struct {
	Description string               `json:"description"`
	Content     map[string]mediaType `json:"content,omitempty"`
	Headers     map[string]header    `json:"headers,omitempty"`
}

type header struct {
	Description string             `json:"description"`
	Schema      *jsonschema.Schema `json:"schema"`
}

type mediaType struct {
	Schema *jsonschema.Schema `json:"schema"`
}

type components struct {
	Schemas         map[string]*jsonschema.Schema `json:"schemas"`
	SecuritySchemes map[string]securityScheme     `json:"securitySchemes"`
}

type securityScheme struct {
	Type   string `json:"type"`
	Scheme string `json:"scheme"`
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// schemaOf is the JSON Schema of a body type: json.RawMessage fields hold
// any JSON.
func schemaOf(t reflect.Type) *jsonschema.Schema {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
	}})
	if err != nil {
		panic(err) // the types are ours: a test builds the document
	}
	notNull(s)
	return s
}

// notNull makes lists and maps non-nullable: the server always sends them,
// empty when they are.
func notNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" && (s.Types[1] == "array" || s.Types[1] == "object") {
		s.Type, s.Types = s.Types[1], nil
	}
	notNull(s.Items)
	notNull(s.AdditionalProperties)
	for _, p := range s.Properties {
		notNull(p)
	}
}

func ref(name string) *jsonschema.Schema {
	return &jsonschema.Schema{Ref: "#/components/schemas/" + name}
}

// buildOpenAPI builds the document of the routes.
func buildOpenAPI(version string) openAPIDoc {
	doc := openAPIDoc{
		OpenAPI: "3.1.0",
		Info: openAPIInfo{Title: "deepgraph research serve", Version: version,
			Description: "Threads, runs, streamed events and interrupts of deep-research and agent runs. " +
				"Errors are {\"error\":{\"code\",\"message\"}}. A run's stream is text/event-stream with the events " +
				"status, activity, token, state, interrupt, report, error and end; their data is JSON (see the Event* schemas)."},
		Paths: map[string]map[string]operation{},
		Components: components{Schemas: map[string]*jsonschema.Schema{
			"Error": schemaOf(reflect.TypeFor[errorBody]()),
		}, SecuritySchemes: map[string]securityScheme{"bearer": {Type: "http", Scheme: "bearer"}}},
		Security: []map[string][]string{{"bearer": {}}},
	}
	for name, t := range map[string]reflect.Type{
		"EventActivity": reflect.TypeFor[Activity](), "EventState": reflect.TypeFor[StateData](), "EventStatus": reflect.TypeFor[statusData](),
		"EventToken": reflect.TypeFor[tokenData](), "EventInterrupt": reflect.TypeFor[Interrupt](), "EventEnd": reflect.TypeFor[endData](),
		"EventError": reflect.TypeFor[errorDetail](),
	} {
		doc.Components.Schemas[name] = schemaOf(t)
	}
	open := []map[string][]string{}
	for _, rt := range routes() {
		op := operation{OperationID: rt.ID, Summary: rt.Summary, Responses: map[string]response{}}
		if !rt.Auth {
			op.Security = &open
		}
		for _, m := range pathParam.FindAllStringSubmatch(rt.Path, -1) {
			op.Parameters = append(op.Parameters, parameter{Name: m[1], In: "path", Required: true, Schema: &jsonschema.Schema{Type: "string"}})
		}
		for _, p := range rt.Query {
			typ := "string"
			if p.Integer {
				typ = "integer"
			}
			op.Parameters = append(op.Parameters, parameter{Name: p.Name, In: "query", Description: p.Description, Schema: &jsonschema.Schema{Type: typ}})
		}
		if rt.Stream {
			op.Parameters = append(op.Parameters, parameter{Name: "Last-Event-ID", In: "header", Description: "resume after this event id",
				Schema: &jsonschema.Schema{Type: "integer"}})
		}
		if rt.Request != nil {
			doc.Components.Schemas[rt.Request.Name()] = schemaOf(rt.Request)
			op.RequestBody = &requestBody{Required: true, Content: map[string]mediaType{"application/json": {Schema: ref(rt.Request.Name())}}}
		}
		ok := response{Description: http.StatusText(rt.Status)}
		switch {
		case rt.Stream:
			ok.Content = map[string]mediaType{"text/event-stream": {Schema: &jsonschema.Schema{Type: "string"}}}
		case rt.Response != nil:
			doc.Components.Schemas[rt.Response.Name()] = schemaOf(rt.Response)
			ok.Content = map[string]mediaType{"application/json": {Schema: ref(rt.Response.Name())}}
		case rt.ID == "openapi":
			ok.Content = map[string]mediaType{"application/json": {Schema: &jsonschema.Schema{Type: "object"}}}
		}
		op.Responses[strconv.Itoa(rt.Status)] = ok
		errs := append([]int{http.StatusInternalServerError}, rt.Errors...)
		if rt.Auth {
			errs = append(errs, http.StatusUnauthorized)
		}
		for _, code := range errs {
			r := response{Description: http.StatusText(code), Content: map[string]mediaType{"application/json": {Schema: ref("Error")}}}
			if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
				r.Headers = map[string]header{"Retry-After": {Description: "seconds to wait", Schema: &jsonschema.Schema{Type: "integer"}}}
			}
			op.Responses[strconv.Itoa(code)] = r
		}
		if doc.Paths[rt.Path] == nil {
			doc.Paths[rt.Path] = map[string]operation{}
		}
		doc.Paths[rt.Path][strings.ToLower(rt.Method)] = op
	}
	return doc
}

var (
	openAPIOnce sync.Once
	openAPIJSON []byte
)

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	openAPIOnce.Do(func() {
		openAPIJSON, _ = json.MarshalIndent(buildOpenAPI(s.opts.Version), "", "  ")
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIJSON)
}
