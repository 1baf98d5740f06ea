package citation_test

import (
	"fmt"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research/citation"
)

// A grounded Gemini reply becomes a summary with markers; the answer model
// copies markers from the summaries (and invents one); Finalize restores
// the real URLs, numbers the citations and drops the invented one.
func Example() {
	const redirect = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"
	resp := &llm.Response{
		Content: "España ganó la Eurocopa 2024. La final fue en Berlín.",
		Grounding: &llm.Grounding{
			Chunks: []llm.GroundingChunk{
				{URI: redirect + "AAA", Title: "uefa.com"},
				{URI: redirect + "BBB", Title: "elpais.com"},
			},
			Supports: []llm.GroundingSupport{
				// UTF-8 byte offsets: "España ganó la Eurocopa 2024." is 31 bytes.
				{StartIndex: 0, EndIndex: 31, ChunkIndices: []int{0}},
				{StartIndex: 32, EndIndex: 56, ChunkIndices: []int{1, 0}},
			},
		},
	}
	summary, sources := citation.Ground(resp, 0, citation.Options{})
	fmt.Println(summary)

	answer := "Spain won Euro 2024 [uefa](https://vertexaisearch.cloud.google.com/id/0-0), " +
		"beating England in Berlin [elpais](https://vertexaisearch.cloud.google.com/id/0-1) " +
		"[apnews](https://vertexaisearch.cloud.google.com/id/1-0)."
	res := citation.Finalize(answer, sources)
	fmt.Println(res.Text)
	for i, s := range res.Sources {
		fmt.Println(i+1, s.Label, s.URL)
	}
	fmt.Println("dropped:", res.Dropped)
	// Output:
	// España ganó la Eurocopa 2024. [uefa](https://vertexaisearch.cloud.google.com/id/0-0) La final fue en Berlín. [elpais](https://vertexaisearch.cloud.google.com/id/0-1) [uefa](https://vertexaisearch.cloud.google.com/id/0-0)
	// Spain won Euro 2024 [1](https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA), beating England in Berlin [2](https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB).
	// 1 uefa https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA
	// 2 elpais https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB
	// dropped: 1
}

// Short URLs are matched as whole tokens: citing …/id/1-10 never picks the
// source …/id/1-1.
func ExampleFinalize() {
	gathered := []citation.Source{
		{Label: "one", ShortURL: citation.ShortURL(1, 1), URL: "https://one.example/"},
		{Label: "ten", ShortURL: citation.ShortURL(1, 10), URL: "https://ten.example/"},
	}
	res := citation.Finalize("Fact [ten](https://vertexaisearch.cloud.google.com/id/1-10).", gathered)
	fmt.Println(res.Text, len(res.Sources))
	// Output:
	// Fact [1](https://ten.example/). 1
}

// A back end that searches with an API shows the model its sources as
// S1…Sn; FromLabels turns the model's [S…] citations into markers.
func ExampleFromLabels() {
	sources := []citation.Source{
		citation.ForResult("Euro 2024 final report", "https://www.uefa.com/euro2024/final", 0, 0),
		citation.ForResult("Spain beat England", "https://www.bbc.co.uk/sport/123", 0, 1),
	}
	text, used := citation.FromLabels("Spain won the final in Berlin [S1, S2]; Kane shared the Golden Boot [S7].", sources)
	fmt.Println(text)
	fmt.Println(len(used))
	// Output:
	// Spain won the final in Berlin [uefa](https://vertexaisearch.cloud.google.com/id/0-0) [bbc](https://vertexaisearch.cloud.google.com/id/0-1); Kane shared the Golden Boot.
	// 2
}
