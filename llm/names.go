package llm

import "strings"

// APIName reduces a tool or schema name to what provider APIs accept:
// letters, digits, '_' and '-', at most 64 characters. Other characters
// become '_'; an empty name becomes "response".
func APIName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "response"
	}
	return b.String()
}
