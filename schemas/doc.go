// Package schemas holds the plain data types that deepgraph's packages share:
// chat messages, tool definitions and tool calls, and the structured-output
// schemas of the deep-search graph (SearchQueryList, Reflection).
//
// It depends on nothing of ours, so any package — llm providers, tools,
// the research graph, a user's own graph state — can use these types without
// pulling in a provider. Every type marshals to plain JSON, so graph states that
// hold them checkpoint without registration.
//
// The JSON names and field descriptions of SearchQueryList and Reflection are
// exactly those of Google's Gemini deep-search reference; the descriptions travel
// to the model as the JSON Schema "description" of each property.
package schemas
