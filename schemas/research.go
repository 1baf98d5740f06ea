package schemas

// SearchQueryList is the structured reply of the query-generation step.
type SearchQueryList struct {
	Query     []string `json:"query" jsonschema:"A list of search queries to be used for web research."`
	Rationale string   `json:"rationale" jsonschema:"A brief explanation of why these queries are relevant to the research topic."`
}

// Reflection is the structured reply of the reflection step: whether the
// research so far answers the question and, if not, what to search next.
type Reflection struct {
	IsSufficient    bool     `json:"is_sufficient" jsonschema:"Whether the provided summaries are sufficient to answer the user's question."`
	KnowledgeGap    string   `json:"knowledge_gap" jsonschema:"A description of what information is missing or needs clarification."`
	FollowUpQueries []string `json:"follow_up_queries" jsonschema:"A list of follow-up queries to address the knowledge gap."`
}
