package browser_test

import (
	"context"
	"fmt"
	"log"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/tools"
	"github.com/deepgraph/deepgraph/tools/browser"
)

// An agent with a browser: the Session is its browser tool, and the
// source of the page state the model sees before each step. It needs
// Chromium, so this example is compiled, not run.
func ExampleNew() {
	var model llm.Model // a model from llm/providers
	reader, err := search.NewReader(search.ReaderConfig{})
	if err != nil {
		log.Fatal(err)
	}
	b, err := browser.New(browser.Options{Reader: reader}) // public addresses only
	if err != nil {
		log.Fatal(err) // browser.ErrNoChromium says how to install it
	}
	defer b.Close() // kills the browser and removes its profile

	set, err := tools.NewCollection(b)
	if err != nil {
		log.Fatal(err)
	}
	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: set, States: []nodes.StateSource{b}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Run(context.Background(), "What does the front page of https://go.dev say about Go?", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Answer) // cites the pages the browser read
}

// The actions a model can take, in the order the tool describes them.
func ExampleActions() {
	for _, a := range browser.Actions() {
		fmt.Println(a)
	}
	// Output:
	// go_to_url
	// click
	// input_text
	// select_option
	// scroll_down
	// scroll_up
	// go_back
	// open_tab
	// switch_tab
	// close_tab
	// extract_content
	// screenshot
	// wait_for
}
