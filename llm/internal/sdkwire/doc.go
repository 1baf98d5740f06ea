// Package sdkwire is what deepgraph's providers on the vendors' SDKs
// (llm/openai on openai-go, llm/anthropic on anthropic-sdk-go) share about
// HTTP exchanges and their errors.
//
// Both SDKs take request middleware. Middleware is one: it adds the
// configured headers, strips the key header for keyless servers, and turns
// an error status into a *StatusError that keeps the status, the headers
// (Retry-After) and the bounded body, and a failed round trip into a
// *TransportError. The SDKs then return these as they are (their own
// retries are off: llm.CallModel and llm.ClientConfig own retrying), and
// Source.Failure makes the *llm.APIError Generate reports: the server's
// message read from whichever shape it has (ErrorMessage: an "error" object
// or string, vLLM's "message", FastAPI's "detail", plain text; never HTML),
// with the key and anything shaped like one masked (Clean).
//
// A reply that is unusable although its status was 200 — an error object in
// the body or the event stream, a stream cut before its final event, a body
// that does not parse — is a *ReplyError. Broken and StreamEnded make the
// ones that match llm.ErrStreamBroken, which llm.CallModel sends again;
// StreamError reads an error event, retryable only when its status says
// the server was overloaded, failing or rate limited.
//
// What differs between the APIs stays in the provider: the key header, how
// an "error" object is decoded (DecodeError), and when a stream is complete.
package sdkwire
