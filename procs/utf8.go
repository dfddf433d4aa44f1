package procs

// CompleteUTF8 returns the length of the longest prefix of b that does not
// end inside an incomplete UTF-8 sequence: where a reader of output may cut
// without splitting a character.
func CompleteUTF8(b []byte) int { return completeUTF8(b) }
