package research

import (
	"context"
	"slices"

	"github.com/deepgraph/deepgraph/research/citation"
)

// Resolving Gemini's grounding redirects off a run's critical path.
//
// A research task of a run (webResearch) does not wait for its sources'
// redirects: GeminiBackend starts resolving them in the background
// (SourceResolver.Prefetch) and returns its finding at once, citing the
// redirects it could not resolve from the resolver's memory by their
// redirect URLs. While the run reflects, researches further and writes its
// answer, the resolutions complete into the resolver's memory — the cache
// of the run, which its later findings read, and of the next runs. When
// the answer's citations are finished (and when a stopped run's report is
// built), the sources whose resolution is known by then show the real page
// (SourceFinisher); the others keep their redirect URL — a slow or failing
// redirect never delays the answer. Outside a run (a Backend called on its
// own), GeminiBackend resolves before it returns, as before.

// SourceFinisher is a Backend whose findings' sources may be finished
// after the fact: GeminiBackend's, whose redirects are resolved in the
// background. The Researcher calls FinishSources on the sources gathered
// when it finishes an answer's citations; it must not wait for anything.
type SourceFinisher interface {
	FinishSources(gathered []citation.Source) []citation.Source
}

// deferKey marks a context whose caller finishes its findings' sources
// (SourceFinisher): a GeminiBackend then resolves them in the background.
type deferKey struct{}

func withDeferredSources(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferKey{}, true)
}

func deferredSources(ctx context.Context) bool {
	v, _ := ctx.Value(deferKey{}).(bool)
	return v
}

// FinishSources implements SourceFinisher: each source whose URL is a
// redirect the resolver has resolved by now shows the real page's URL
// (its title too, when it was read), and lists the redirect among its
// Redirects, so that a citation of either maps to it; sources of one page
// become one when the citations are finished. It never waits.
func (b GeminiBackend) FinishSources(gathered []citation.Source) []citation.Source {
	if b.KeepRedirects || b.Resolver == nil {
		return gathered
	}
	var out []citation.Source
	for i, s := range gathered {
		res, ok := b.Resolver.Lookup(s.URL)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(gathered)
		}
		s.Redirects = append(slices.Clone(s.Redirects), s.URL)
		s.URL = res.URL
		if res.Title != "" {
			s.Title = res.Title
		}
		out[i] = s
	}
	if out == nil {
		return gathered
	}
	return out
}

// finishSources is the Backend's FinishSources of gathered, if it has one.
func finishSources(b Backend, gathered []citation.Source) []citation.Source {
	if f, ok := b.(SourceFinisher); ok {
		return f.FinishSources(gathered)
	}
	return gathered
}

// Prefetch starts resolving, in the background, the redirects among urls
// that the resolver neither remembers nor is resolving already, and
// returns at once; the channel is closed when every redirect among urls
// that was being resolved, by this call or an earlier one, is resolved or
// given up (each within the resolver's Deadline). Lookup reads what they
// found. Close stops them. With the cache disabled nothing is remembered,
// and Prefetch does nothing.
func (r *SourceResolver) Prefetch(urls []string) <-chan struct{} {
	var unresolved []string
	var waits []chan struct{}
	own := make(chan struct{})
	r.mu.Lock()
	if r.targets != nil && r.bgCtx.Err() == nil {
		for _, u := range urls {
			if !r.IsRedirect(u) {
				continue
			}
			if c, ok := r.prefetching[u]; ok {
				if c != own && !slices.Contains(waits, c) {
					waits = append(waits, c)
				}
				continue
			}
			if _, ok := r.targets.get(u); ok {
				continue
			}
			r.prefetching[u] = own
			unresolved = append(unresolved, u)
		}
	}
	if len(unresolved) == 0 && len(waits) == 0 {
		r.mu.Unlock()
		close(own)
		return own
	}
	r.bg.Add(1)
	r.mu.Unlock()
	done := own
	if len(waits) > 0 {
		done = make(chan struct{})
	}
	go func() {
		defer r.bg.Done()
		if len(unresolved) > 0 {
			r.Resolve(r.bgCtx, unresolved)
		}
		r.mu.Lock()
		for _, u := range unresolved {
			delete(r.prefetching, u)
		}
		r.mu.Unlock()
		close(own)
		if len(waits) > 0 {
			for _, c := range waits {
				<-c // each ends within the Deadline, or at Close
			}
			close(done)
		}
	}()
	return done
}

// Lookup returns where redirect leads if the resolver knows it now — it
// resolved it before (Resolve or Prefetch) and still remembers it — with
// the page's title when it was read; a redirect whose page Prefetch is
// still reading is not known yet. It never waits nor fetches.
func (r *SourceResolver) Lookup(redirect string) (Resolved, bool) {
	if !r.IsRedirect(redirect) {
		return Resolved{}, false
	}
	hr, ok := r.targets.get(redirect)
	if !ok || hr.refused {
		return Resolved{}, false
	}
	if p, ok := r.pages.get(hr.target); ok {
		return p, true
	}
	r.mu.Lock()
	_, reading := r.prefetching[redirect]
	r.mu.Unlock()
	if reading {
		return Resolved{}, false // its page is being read: not known yet
	}
	return Resolved{URL: hr.target}, true // its page could not be read
}

// known is what the resolver knows now of the redirects among urls.
func (r *SourceResolver) known(urls []string) map[string]Resolved {
	out := map[string]Resolved{}
	for _, u := range urls {
		if res, ok := r.Lookup(u); ok {
			out[u] = res
		}
	}
	return out
}
