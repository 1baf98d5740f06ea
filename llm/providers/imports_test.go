package providers_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/deepgraph/deepgraph/"

// TestEachProviderCompilesAlone checks, with `go list -deps`, that a
// program importing one provider package compiles no other provider and
// none of their SDKs (openai-go, anthropic-sdk-go, langchaingo, Google's),
// that the langchaingo adapter compiles none of them, that the providers
// package — which opens the built-in providers — does not compile
// langchaingo, and that package research compiles no provider at all:
// users import the providers they use, and only this package compiles the
// built-in ones.
func TestEachProviderCompilesAlone(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH:", err)
	}
	const (
		openaiSDK    = "github.com/openai/openai-go"
		anthropicSDK = "github.com/anthropics/anthropic-sdk-go"
		langchaingo  = "github.com/tmc/langchaingo"
	)
	google := []string{"google.golang.org/grpc", "google.golang.org/protobuf", "google.golang.org/genai", "cloud.google.com/go"}
	tests := []struct {
		pkg    string
		banned []string // import path prefixes the package must not compile
	}{
		{"llm/gemini", append([]string{openaiSDK, anthropicSDK, langchaingo, module + "llm/openai", module + "llm/anthropic", module + "llm/providers"}, google...)},
		{"llm/openai", append([]string{anthropicSDK, langchaingo, module + "llm/gemini", module + "llm/anthropic", module + "llm/providers"}, google...)},
		{"llm/anthropic", append([]string{openaiSDK, langchaingo, module + "llm/gemini", module + "llm/openai", module + "llm/providers"}, google...)},
		{"llm/langchaingo", []string{openaiSDK, anthropicSDK, module + "llm/gemini", module + "llm/openai", module + "llm/anthropic", module + "llm/providers"}},
		{"llm/providers", []string{langchaingo}},
		{"research", append([]string{openaiSDK, anthropicSDK, langchaingo, module + "llm/gemini", module + "llm/openai", module + "llm/anthropic", module + "llm/providers"}, google...)},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+tt.pkg).CombinedOutput()
			require.NoError(t, err, "go list: %s", out)
			imports := map[string][]string{}
			for line := range strings.Lines(string(out)) {
				fields := strings.Fields(line)
				if len(fields) > 0 {
					imports[fields[0]] = fields[1:]
				}
			}
			for _, b := range tt.banned {
				var hits []string
				for dep := range imports {
					if dep == b || strings.HasPrefix(dep, b+"/") {
						hits = append(hits, dep)
					}
				}
				if len(hits) > 0 {
					slices.Sort(hits)
					t.Errorf("%s compiles %d packages of %s (of %d in all), e.g. via %s", tt.pkg, len(hits), b, len(imports),
						strings.Join(importPath(imports, module+tt.pkg, hits[0]), " → "))
				}
			}
		})
	}
}

// importPath returns a shortest chain of imports from root to dep.
func importPath(imports map[string][]string, root, dep string) []string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == dep {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, q := range imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return []string{root, "…", dep}
}
