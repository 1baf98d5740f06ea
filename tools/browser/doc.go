// Package browser is the agent's browser tool: a real headless Chromium,
// driven over the DevTools protocol with chromedp, offered to a model as
// one tool ("browser") with OpenManus's browser_use actions — go_to_url,
// click and input_text by element number, select_option, scroll_down and
// scroll_up, go_back, open_tab, switch_tab and close_tab, extract_content
// (the page's readable content as Markdown, through the search reader, with
// a goal), screenshot (an image for models that see) and wait_for (a text
// or a CSS selector, bounded).
//
// # The model's view
//
// A Session is both the tool and a source of state (nodes.StateSource):
// before each step an agent shows the model Session.State — the tabs, the
// current page's URL and title, its interactive elements numbered in
// document order with their role, visible text, value and a short CSS
// locator (those in view first, at most Options.MaxElements), the text
// above, in and below the viewport, and the last action's result — at most
// Options.MaxStateChars characters, fenced as untrusted like tool output.
// The numbers refer to that state: the elements are kept by page.js in an
// isolated world of the page (the page's own scripts cannot see or change
// them), and an action on a page that has changed since says so instead of
// clicking something else.
//
// Clicks are real mouse events at the element (scrolled into view); typing
// is trusted input (Input.insertText) into the focused field, replacing
// its content. After an action the session waits for what it set off: a
// navigation and its load (bounded: a page still loading at three quarters
// of Options.ActionTimeout is stopped and shown as far as it loaded), a
// tab the page opened (which becomes current), and the DOM settling.
// Results name the page an action ended on, and that page is a
// tools.Source, so an agent labels it [S1], [S2], … like fetch_page's
// pages and checks the answer's citations against them.
//
// # Safe by default
//
//   - Every request of the browser — navigations, each redirect hop,
//     window.open, iframes (also cross-site ones, in their own processes),
//     subresources, fetch, WebSockets — goes through a proxy of the session
//     on loopback that dials only what the SSRF guard (search/netguard,
//     Options.Guard, the same policy as fetch_page's) admits, on the
//     address it resolved and checked itself; Chromium resolves no host.
//     Refused requests are reported to the model with the reason. QUIC is
//     off and WebRTC may not use UDP outside the proxy.
//   - Only http and https pages can be opened.
//   - Downloads are refused (Browser.setDownloadBehavior deny), file
//     choosers are intercepted and never answered, file fields take no
//     text, and notifications, location, camera, microphone and the other
//     device permissions are denied.
//   - Each session has a fresh profile in a temporary directory, with its
//     own home, caches and temporary files; Chromium gets none of the
//     program's environment (no API keys). Close removes it all; the
//     directory of a session whose program was killed is removed by the
//     next session that starts.
//   - The browser runs in its own process group and, on Linux, dies with
//     the program even on SIGKILL (Pdeathsig; its children follow it).
//     Close kills the group and every process carrying the session's tag.
//   - Every action is bounded by Options.ActionTimeout; a session loads at
//     most Options.MaxPages pages and keeps at most Options.MaxTabs tabs
//     (a page that opens one more has it closed; script popups are
//     blocked). Options.Slots bounds the browsers of many sessions (a
//     server's runs).
//
// Chromium runs without its sandbox only when it must: as root, or with
// Options.NoSandbox (containers without user namespaces).
//
// # Example
//
//	b, err := browser.New(browser.Options{Reader: reader})
//	if errors.Is(err, browser.ErrNoChromium) { … } // says how to install it
//	defer b.Close()
//	set, err := tools.NewCollection(b)
//	…
//	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: m, Tools: set, States: []nodes.StateSource{b}})
package browser
