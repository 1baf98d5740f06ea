// Package wiretap is the HTTP layer shared by deepgraph's providers that are
// built on github.com/tmc/langchaingo (llm/openai and llm/anthropic).
//
// langchaingo builds each request and runs each exchange, but it folds HTTP
// errors into strings, hides network errors, stops reading event streams at
// lines over 64 KiB and takes a stream that stops early for a whole reply. A
// provider therefore puts a Transport between langchaingo and the retrying
// transport of llm.ClientConfig, and stores one Call per Generate in the
// request context (WithCall). For that call the Transport
//
//   - strips the key header for keyless servers and adds configured headers;
//   - lets the call edit the JSON body langchaingo built (EditJSONBody);
//   - lets the call record the exchange in its Exchange: status,
//     Retry-After, the bounded error body, a transport error, and a reply
//     that is unusable although the status was 200 (a ReplyError);
//   - passes event streams through a LineTap, which shows every line to
//     the provider before langchaingo's scanner sees it, keeps lines too long
//     for that scanner from it, and turns the end of the body into the error
//     the provider chooses (io.EOF only for a complete stream).
//
// After langchaingo returns, Exchange.Failure turns what was recorded into the
// *llm.APIError Generate reports. Every text that reaches an error goes
// through Clean, which masks the API key and anything shaped like one.
//
// What differs between the APIs stays in the provider: the key header, how
// an "error" object is decoded (DecodeError), what a stream line means and
// when a stream is complete.
//
// A provider's use, in short:
//
//	hc.Transport = &wiretap.Transport{Next: hc.Transport, KeyHeader: "Authorization", Keyless: key == ""}
//	…
//	c := newCall(spec) // embeds wiretap.Exchange, implements wiretap.Call
//	resp, err := lc.GenerateContent(wiretap.WithCall(ctx, c), msgs, opts...)
//	if err != nil {
//		c.mu.Lock()
//		defer c.mu.Unlock()
//		if e := c.Failure(err, source); e != nil {
//			return nil, e
//		}
//		…
//	}
package wiretap
