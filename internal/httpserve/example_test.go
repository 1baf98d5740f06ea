package httpserve_test

import (
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/deepgraph/deepgraph/internal/httpserve"
)

func ExampleNew() {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	srv := httpserve.New(mux, httpserve.Options{MaxConns: 100, MaxConnsPerAddr: 10})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.Status, " ", string(body))
	// Output: 200 OK ok
}
