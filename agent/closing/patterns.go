package closing

import (
	"regexp"
	"strings"
)

// The words that decide, in one place. Every pattern runs on a lower-cased
// sentence whose inline code and quotes were dropped; each is exercised by
// entries of testdata/corpus.txt.

// asks are sentences that ask the person to decide or act.
var asks = compile(
	`\blet me know\s*[.!]?$`, // bare "Let me know."
	`\blet me know (which|whether|what|how|when|where|who|your|if i should|if (that|this|it)('s| is| works| sounds| looks)|if you (want|would like|'d like|prefer) (me to|to|the|a|an|it|that|this))`,
	`\b(please|kindly)\b.*\b(choose|pick|select|decide|confirm|clarify|advise|approve|specify|tell me|let me know|answer|reply)\b`,
	`\b(tell|show) me (which|whether|what|how|if)\b`,
	`\bi need (you|your|to know|a decision|confirmation)\b`,
	`\b(wait|waiting|await|awaiting) (for )?(your|you)\b`,
	`\byour (call|decision|choice|preference)\b`,
	`\b(can|could|would) you (confirm|clarify|tell|choose|pick|decide|share|provide|check|let me know)\b`,
	`\bbefore i (proceed|continue|go ahead|start|make)\b.*\b(need|confirm|know|want)\b`,
	`^(which|what) (do|would) you (prefer|want|like)\b`,
	`\b(tell|ping) me (and|when|once)\b`,
	`\b(once|when|after) you\b.*\b(i'll|i will|i can) (continue|proceed|resume|finish|carry on)\b`,
)

// politeOffers close finished work with an offer; they ask nothing that the
// work waits on.
var politeOffers = compile(
	`\blet me know if (you|there)('re| are| is|'d| would| need| have| run| hit| see| spot| notice| find| want (anything|any|more|further)|'d like (any|anything|more|further)|would like (any|anything|more|further))`,
	`\blet me know if (anything|something)\b`,
	`\b(feel free|happy to help|hope (this|that) helps|glad to help)\b`,
	`^if you('d| would)? (like|want|prefer)\b.*\b(i can|i could|happy to)\b`,
	`\banything else\b`,
	`\bany (other|more|further) (changes|questions|tweaks|requests)\b`,
)

// signOffs follow a question without answering it.
var signOffs = compile(
	`^(thanks|thank you|cheers|thx)\b`,
)

// answers are questions that carry their own answer ("Is it X? Partly — …").
var answers = compile(
	`\?\s*(yes|no|partly|probably|mostly|because|not really)\b`,
)

// answerStarts begin a sentence that answers the question before it.
var answerStarts = compile(
	`^(yes|no|partly|probably|possibly|mostly|because|not really|it |it's|its |the |this |that's|turns out|short answer|in short)`,
)

// person holds the words that make a question speak to the person or about
// what the agent should do.
var person = map[string]bool{
	"you": true, "your": true, "you'd": true, "you're": true, "you've": true, "yours": true, "you'll": true,
	"i": true, "i'm": true, "i'd": true, "i'll": true, "me": true, "my": true,
	"we": true, "we're": true, "us": true, "our": true, "let's": true,
	"shall": true, "ok": true, "okay": true, "alright": true,
}

func compile(exprs ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(exprs))
	for i, e := range exprs {
		out[i] = regexp.MustCompile(e)
	}
	return out
}

func matchAny(s string, res []*regexp.Regexp) bool {
	s = strings.TrimSpace(s)
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
