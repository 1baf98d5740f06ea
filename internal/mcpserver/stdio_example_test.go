package mcpserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/deepgraph/deepgraph/internal/mcpserver"
	"github.com/deepgraph/deepgraph/search"
)

// pages is a page reader with no pages.
type pages struct{}

func (pages) Read(context.Context, string) (*search.Page, error) { return nil, fmt.Errorf("no page") }

// A line that is not JSON is answered with a Parse error, and the session
// goes on: the ping after it is answered.
func ExampleStdio() {
	srv, err := mcpserver.New(context.Background(), mcpserver.Options{Version: "v1", Reader: pages{},
		Research: func(context.Context) (mcpserver.Researcher, error) { return nil, fmt.Errorf("no research here") }})
	if err != nil {
		fmt.Println(err)
		return
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _ = srv.Run(context.Background(), mcpserver.Stdio(inR, outW, mcpserver.StdioOptions{})) }()
	go func() {
		_, _ = io.WriteString(inW, "hello world\n"+`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	}()
	out := bufio.NewScanner(outR)
	for range 2 {
		out.Scan()
		fmt.Println(out.Text())
	}
	_ = inW.Close()
	// Output:
	// {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the message is not JSON; send one JSON-RPC 2.0 object per line"}}
	// {"jsonrpc":"2.0","id":1,"result":{}}
}
