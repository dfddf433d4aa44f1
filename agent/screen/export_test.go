package screen

// PatternNames lists the patterns in the order Classify tries them, so the
// tests can check that each one is proven by a screen.
func PatternNames() []string {
	names := make([]string, len(patterns))
	for i, p := range patterns {
		names[i] = p.name
	}
	return names
}
