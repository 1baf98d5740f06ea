package tools_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/deepgraph/deepgraph/tools"
)

// EffectOf says whether a call may change something outside the run: the
// editor's view does not, its create does — and a view of the file shows
// what it did, for when its outcome is unknown.
func ExampleEffectOf() {
	dir, _ := os.MkdirTemp("", "ws")
	defer os.RemoveAll(dir)
	ed, err := tools.NewEditor(tools.EditorOptions{Workspace: dir})
	if err != nil {
		panic(err)
	}
	view := tools.EffectOf(ed, json.RawMessage(`{"command":"view","path":"notes.md"}`))
	create := tools.EffectOf(ed, json.RawMessage(`{"command":"create","path":"notes.md","file_text":"hi"}`))
	fmt.Println(view.Effectful)
	fmt.Println(create.Effectful, string(create.Check))
	// Output:
	// false
	// true {"command":"view","path":"notes.md"}
}
