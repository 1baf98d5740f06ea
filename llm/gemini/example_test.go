package gemini_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/gemini"
	"github.com/deepgraph/deepgraph/schemas"
)

// A grounded search call against a stand-in for the Gemini API. Grounding
// offsets are UTF-8 byte offsets into the part named by PartIndex, so they
// slice Go strings directly, accents and all.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// POST /v1beta/models/gemini-2.5-flash:generateContent, key in x-goog-api-key.
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{
		  "candidates": [{
		    "content": {"role": "model", "parts": [{"text": "Spain won Euro 2024. Café owners in Madrid celebrated."}]},
		    "finishReason": "STOP",
		    "groundingMetadata": {
		      "webSearchQueries": ["euro 2024 winner"],
		      "groundingChunks": [{"web": {"uri": "https://www.uefa.com/euro2024/", "title": "uefa.com"}},
		                          {"web": {"uri": "https://elpais.com/", "title": "elpais.com"}}],
		      "groundingSupports": [
		        {"segment": {"endIndex": 20, "text": "Spain won Euro 2024."}, "groundingChunkIndices": [0]},
		        {"segment": {"startIndex": 21, "endIndex": 55, "text": "Café owners in Madrid celebrated."}, "groundingChunkIndices": [1]}
		      ]
		    }
		  }],
		  "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 14, "toolUsePromptTokenCount": 90, "totalTokenCount": 112},
		  "modelVersion": "gemini-2.5-flash"
		}`)
	}))
	defer srv.Close()

	ctx := context.Background()
	// In real use: gemini.NewFromEnv(ctx, gemini.Config{}) with GEMINI_API_KEY set.
	model, err := gemini.New(ctx, gemini.Config{APIKey: "example-key", BaseURL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := model.Generate(ctx, []schemas.Message{schemas.UserMessage("Who won Euro 2024?")},
		llm.GoogleSearch(), llm.Temperature(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Content)
	fmt.Println("searched:", strings.Join(resp.Grounding.WebSearchQueries, ", "))
	for _, s := range resp.Grounding.Supports {
		src := resp.Grounding.Chunks[s.ChunkIndices[0]]
		fmt.Printf("%q [%d:%d] <- %s\n", resp.Parts[s.PartIndex][s.StartIndex:s.EndIndex], s.StartIndex, s.EndIndex, src.Title)
	}
	fmt.Printf("tokens: prompt %d, completion %d, total %d\n", resp.Usage.PromptTokens, resp.Usage.CompletionTokens, resp.Usage.TotalTokens)
	// Output:
	// Spain won Euro 2024. Café owners in Madrid celebrated.
	// searched: euro 2024 winner
	// "Spain won Euro 2024." [0:20] <- uefa.com
	// "Café owners in Madrid celebrated." [21:55] <- elpais.com
	// tokens: prompt 98, completion 14, total 112
}
