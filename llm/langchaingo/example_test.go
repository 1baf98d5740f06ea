package langchaingo_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms/fake"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/langchaingo"
	"github.com/deepgraph/deepgraph/schemas"
)

// Any langchaingo model becomes an llm.Model; here langchaingo's own fake.
func Example() {
	lc := fake.NewFakeLLM([]string{
		"Paris.",
		"```json\n{\"query\": [\"capital of France\"], \"rationale\": \"one fact\",}\n```",
	})
	model := langchaingo.New(lc, "fake")

	resp, err := model.Generate(context.Background(), []schemas.Message{schemas.UserMessage("Capital of France?")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Content)

	// Structured output goes through the schema prompt and llm's lenient,
	// repairing reader: the fence and the trailing comma are no obstacle.
	q, err := llm.Structured[schemas.SearchQueryList](context.Background(), model,
		[]schemas.Message{schemas.UserMessage("Plan a search.")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(q.Query, q.Rationale)
	// Output:
	// Paris.
	// [capital of France] one fact
}
