package server

import (
	"net/http"
	"reflect"
)

// route is one endpoint of the API: how it is served and how the OpenAPI
// document describes it (both come from this table).
type route struct {
	Method, Path string
	ID, Summary  string
	// Auth: the route needs the token (when the server has one).
	Auth bool
	// Request is the JSON body's type, nil for none.
	Request reflect.Type
	// Status and Response are the success status and its JSON body's type
	// (nil: no body, or an event stream when Stream).
	Status   int
	Response reflect.Type
	Stream   bool
	Query    []param
	// Errors are the error statuses the route may answer with, besides
	// 401 (Auth) and 500.
	Errors []int
	Handle func(*Server, http.ResponseWriter, *http.Request)
}

// param is a query parameter.
type param struct {
	Name, Description string
	Integer           bool
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

var paging = []param{
	{Name: "limit", Description: "page size, 1 to 100 (default 20)", Integer: true},
	{Name: "offset", Description: "items to skip (default 0)", Integer: true},
}

// routes is the API.
func routes() []route {
	bad, missing, conflict := http.StatusBadRequest, http.StatusNotFound, http.StatusConflict
	body := []int{bad, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType}
	return []route{
		{Method: "GET", Path: "/healthz", ID: "health", Summary: "Liveness and the queue's load",
			Status: 200, Response: typeOf[Health](), Handle: (*Server).health},
		{Method: "GET", Path: "/openapi.json", ID: "openapi", Summary: "This document",
			Status: 200, Handle: (*Server).openAPI},
		{Method: "GET", Path: "/info", ID: "info", Summary: "What a run may choose: kinds, efforts, back ends, models",
			Auth: true, Status: 200, Response: typeOf[Info](), Handle: (*Server).info},
		{Method: "POST", Path: "/threads", ID: "createThread", Summary: "Create a thread",
			Auth: true, Request: typeOf[CreateThread](), Status: 201, Response: typeOf[Thread](), Errors: body, Handle: (*Server).createThread},
		{Method: "GET", Path: "/threads", ID: "listThreads", Summary: "List threads, newest first",
			Auth: true, Status: 200, Response: typeOf[ThreadList](), Query: paging, Errors: []int{bad}, Handle: (*Server).listThreads},
		{Method: "GET", Path: "/threads/{thread_id}", ID: "getThread", Summary: "A thread: its status, state and runs",
			Auth: true, Status: 200, Response: typeOf[ThreadDetail](), Errors: []int{missing}, Handle: (*Server).getThread},
		{Method: "DELETE", Path: "/threads/{thread_id}", ID: "deleteThread", Summary: "Delete a thread with its runs and checkpoints",
			Auth: true, Status: 204, Errors: []int{missing, conflict}, Handle: (*Server).deleteThread},
		{Method: "GET", Path: "/threads/{thread_id}/history", ID: "threadHistory", Summary: "A thread's checkpoints, newest first",
			Auth: true, Status: 200, Response: typeOf[History](), Query: paging[:1], Errors: []int{bad, missing}, Handle: (*Server).history},
		{Method: "POST", Path: "/threads/{thread_id}/runs", ID: "createRun", Summary: "Start a run on a thread (queued)",
			Auth: true, Request: typeOf[RunRequest](), Status: 202, Response: typeOf[Run](),
			Errors: append([]int{missing, conflict, http.StatusTooManyRequests, http.StatusServiceUnavailable}, body...), Handle: (*Server).createRun},
		{Method: "GET", Path: "/threads/{thread_id}/runs", ID: "listThreadRuns", Summary: "A thread's runs, oldest first",
			Auth: true, Status: 200, Response: typeOf[RunList](), Errors: []int{missing}, Handle: (*Server).threadRuns},
		{Method: "GET", Path: "/runs", ID: "listRuns", Summary: "Every thread's runs, newest first",
			Auth: true, Status: 200, Response: typeOf[RunList](), Query: paging, Errors: []int{bad}, Handle: (*Server).listRuns},
		{Method: "GET", Path: "/threads/{thread_id}/runs/{run_id}", ID: "getRun", Summary: "A run, with its report when it has one",
			Auth: true, Status: 200, Response: typeOf[Run](), Errors: []int{missing}, Handle: (*Server).getRun},
		{Method: "POST", Path: "/threads/{thread_id}/runs/{run_id}/cancel", ID: "cancelRun", Summary: "Cancel a queued or running run",
			Auth: true, Status: 202, Response: typeOf[Run](), Errors: []int{missing, conflict}, Handle: (*Server).cancelRun},
		{Method: "POST", Path: "/threads/{thread_id}/runs/{run_id}/resume", ID: "resumeRun",
			Summary: "Answer the interrupt a run waits on, or resume an interrupted run (queued)",
			Auth:    true, Request: typeOf[ResumeRequest](), Status: 202, Response: typeOf[Run](),
			Errors: append([]int{missing, conflict, http.StatusTooManyRequests, http.StatusServiceUnavailable}, body...), Handle: (*Server).resumeRun},
		{Method: "GET", Path: "/threads/{thread_id}/runs/{run_id}/stream", ID: "streamRun",
			Summary: "The run's events as Server-Sent Events; Last-Event-ID (or ?after=) resumes after an event",
			Auth:    true, Status: 200, Stream: true, Query: []param{{Name: "after", Description: "send the events after this id (as Last-Event-ID)", Integer: true}},
			Errors: []int{bad, missing}, Handle: (*Server).streamRun},
	}
}
