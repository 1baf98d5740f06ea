package research

import (
	"fmt"
	"strings"
)

// Effort is a preset of research breadth and depth.
type Effort struct {
	Name    string `json:"name"`
	Queries int    `json:"queries"` // initial queries (and follow-ups per round)
	Loops   int    `json:"loops"`   // reflections at most
}

// Efforts returns the presets, as the reference's web interface offers them:
// low (1 query, 1 loop), medium (3, 3) and high (5, 10).
func Efforts() []Effort {
	return []Effort{{"low", 1, 1}, {"medium", 3, 3}, {"high", 5, 10}}
}

// EffortByName returns the preset called name (case-insensitive).
func EffortByName(name string) (Effort, error) {
	var names []string
	for _, e := range Efforts() {
		if strings.EqualFold(e.Name, strings.TrimSpace(name)) {
			return e, nil
		}
		names = append(names, e.Name)
	}
	return Effort{}, fmt.Errorf("unknown effort %q: use one of %s", name, strings.Join(names, ", "))
}
