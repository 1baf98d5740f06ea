package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The OpenAPI document matches the handlers: every route is in it with its
// parameters and answers, and — through checkedHandler, which every test
// server uses — every response of every API test is one the document
// lists for its route, with a body its schema accepts.

func TestOpenAPIDocument(t *testing.T) {
	ts := newTestServer(t, world{})
	status, data, hdr := ts.do("GET", "/openapi.json", nil)
	require.Equal(t, 200, status)
	assert.Equal(t, "application/json", hdr.Get("Content-Type"))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, "3.1.0", doc["openapi"])
	paths := doc["paths"].(map[string]any)

	var listed []string
	for _, rt := range routes() {
		ops, ok := paths[rt.Path].(map[string]any)
		require.True(t, ok, "path %s is documented", rt.Path)
		op, ok := ops[strings.ToLower(rt.Method)].(map[string]any)
		require.True(t, ok, "%s %s is documented", rt.Method, rt.Path)
		assert.Contains(t, op["responses"], strconv.Itoa(rt.Status))
		// Path parameters are exactly the pattern's wildcards.
		var params []string
		for _, p := range asList(op["parameters"]) {
			if p.(map[string]any)["in"] == "path" {
				params = append(params, p.(map[string]any)["name"].(string))
			}
		}
		var want []string
		for _, m := range regexp.MustCompile(`\{([a-z_]+)\}`).FindAllStringSubmatch(rt.Path, -1) {
			want = append(want, m[1])
		}
		assert.Equal(t, want, params, "%s %s", rt.Method, rt.Path)
		listed = append(listed, rt.Method+" "+rt.Path)
	}
	// Nothing documented that is not served.
	var documented []string
	for p, ops := range paths {
		for m := range ops.(map[string]any) {
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	slices.Sort(listed)
	slices.Sort(documented)
	assert.Equal(t, listed, documented)

	// Every $ref resolves.
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, ref := range regexp.MustCompile(`"\$ref":\s*"#/components/schemas/([A-Za-z]+)"`).FindAllStringSubmatch(string(data), -1) {
		assert.Contains(t, schemas, ref[1])
	}
	// And every documented route answers: an unknown path does not.
	for _, rt := range routes() {
		path := strings.NewReplacer("{thread_id}", "nothread", "{run_id}", "norun").Replace(rt.Path)
		status, _, _ := ts.do(rt.Method, path, bodyFor(rt))
		assert.NotEqual(t, http.StatusMethodNotAllowed, status, "%s %s is served", rt.Method, rt.Path)
	}
	status, _, _ = ts.do("GET", "/nothing-here", nil)
	assert.Equal(t, 404, status)
}

func bodyFor(rt route) any {
	if rt.Request == nil {
		return nil
	}
	return map[string]any{}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// checkedHandler checks each API response against the OpenAPI document's
// route: a listed status, and a JSON body its schema accepts.
func checkedHandler(t testing.TB, h http.Handler) http.Handler {
	mux := http.NewServeMux()
	byPattern := map[string]route{}
	for _, rt := range routes() {
		p := rt.Method + " " + rt.Path
		byPattern[p] = rt
		mux.Handle(p, http.NotFoundHandler())
	}
	var mu sync.Mutex
	resolved := map[reflect.Type]*jsonschema.Resolved{}
	schema := func(typ reflect.Type) *jsonschema.Resolved {
		mu.Lock()
		defer mu.Unlock()
		if r, ok := resolved[typ]; ok {
			return r
		}
		r, err := schemaOf(typ).Resolve(nil)
		require.NoError(t, err)
		resolved[typ] = r
		return r
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := mux.Handler(r)
		rt, ok := byPattern[pattern]
		if !ok || rt.Stream || rt.ID == "openapi" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())

		documented := append([]int{rt.Status, http.StatusInternalServerError}, rt.Errors...)
		if rt.Auth {
			documented = append(documented, http.StatusUnauthorized)
		}
		if !slices.Contains(documented, rec.Code) && rec.Code != http.StatusForbidden && rec.Code != http.StatusMisdirectedRequest {
			t.Errorf("%s %s answered %d, which the OpenAPI document does not list (%v)", r.Method, r.URL.Path, rec.Code, documented)
		}
		typ := reflect.TypeFor[errorBody]()
		if rec.Code == rt.Status {
			typ = rt.Response
		}
		if typ == nil {
			if rec.Body.Len() > 0 {
				t.Errorf("%s %s answered %d with a body the document does not describe", r.Method, r.URL.Path, rec.Code)
			}
			return
		}
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Errorf("%s %s: the body is not JSON: %v", r.Method, r.URL.Path, err)
			return
		}
		if err := schema(typ).Validate(v); err != nil {
			t.Errorf("%s %s (%d): the body does not match the document's %s schema: %v\n%s", r.Method, r.URL.Path, rec.Code, typ.Name(), err,
				bytes.TrimSpace(rec.Body.Bytes()))
		}
	})
}
