package research

import (
	"context"

	"github.com/deepgraph/deepgraph/graph"
)

// NodeReviewQueries is the node where a run with Review pauses for a person
// to approve or edit the queries it is about to search.
const NodeReviewQueries = "review_queries"

// ReviewStage says which queries a review is about.
type ReviewStage string

// The stages of a review.
const (
	ReviewInitial  ReviewStage = "initial"   // the first round's queries
	ReviewFollowUp ReviewStage = "follow_up" // a reflection's follow-up queries
)

// ReviewRequest is what a run with Review pauses to show (the payload of its
// interrupt): the queries it is about to search.
type ReviewRequest struct {
	Question string      `json:"question"`
	Stage    ReviewStage `json:"stage"`
	// Loop is the number of reflections so far (0 for the first round).
	Loop    int      `json:"loop"`
	Queries []string `json:"queries"`
	// KnowledgeGap is what the reflection found missing (follow-ups only).
	KnowledgeGap string `json:"knowledge_gap,omitempty"`
}

// ReviewAnswer is a person's answer to a ReviewRequest. The zero value
// approves the queries as proposed.
type ReviewAnswer struct {
	// Queries replace the proposed queries when not empty.
	Queries []string `json:"queries,omitempty"`
	// Stop ends the research: the answer is written from what was found.
	Stop bool `json:"stop,omitempty"`
}

// maxReviewedQueries bounds the queries a person may ask for in one round.
const maxReviewedQueries = 20

// reviewQueries pauses the run until a person approves or edits the queries
// about to be searched.
func (r *Researcher) reviewQueries(ctx context.Context, s State) (graph.Update[State], error) {
	req := ReviewRequest{Question: lastQuestion(s.Messages), Stage: ReviewInitial, Loop: s.Loops, Queries: s.Queries}
	if s.Loops > 0 {
		req.Stage, req.Queries, req.KnowledgeGap = ReviewFollowUp, s.Pending, s.Reflection.KnowledgeGap
	}
	ans, err := graph.Interrupt[ReviewAnswer](ctx, req)
	if err != nil {
		return graph.Update[State]{}, err
	}
	earlier := s.Queries[:len(s.Queries)-len(s.Pending)] // searched in earlier rounds
	if req.Stage == ReviewInitial {
		earlier = nil
	}
	next := req.Queries
	switch {
	case ans.Stop:
		next = nil
	case len(ans.Queries) > 0:
		next = newQueries(ans.Queries, earlier, maxReviewedQueries)
	}
	queries := append(earlier[:len(earlier):len(earlier)], next...)
	if req.Stage == ReviewInitial {
		return graph.Writes(fQueries.Set(queries)), nil
	}
	return graph.Writes(fQueries.Set(queries), fPending.Set(next)), nil
}

// afterReview sends the reviewed queries to web research, or finalises when
// none are left.
func (r *Researcher) afterReview(s State) graph.Route {
	if s.Loops == 0 {
		if len(s.Queries) == 0 {
			return graph.Goto(NodeFinalizeAnswer)
		}
		return r.research(s, s.Queries)
	}
	if len(s.Pending) == 0 {
		return graph.Goto(NodeFinalizeAnswer)
	}
	return r.research(s, s.Pending)
}

// reviewing reports whether the run pauses for reviews.
func reviewing(s State) bool { return s.Review != nil && *s.Review }
