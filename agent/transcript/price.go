package transcript

import "strings"

// price is a model's list price in USD per million tokens.
type price struct{ input, output float64 }

// Cache writes cost 1.25× input (5-minute cache) and cache reads 0.1× input,
// as on Anthropic's price list.
const (
	cacheWriteFactor = 1.25
	cacheReadFactor  = 0.1
)

// prices by model family, matched on the model id; the newest generation's
// list prices. An unknown model is priced as sonnet: a wrong estimate is
// better than a silent zero, and the stream driver's own figure wins where
// the CLI gives one.
var prices = []struct {
	family string
	p      price
}{
	{"opus", price{5, 25}},
	{"sonnet", price{3, 15}},
	{"haiku", price{1, 5}},
}

// Price estimates the cost of one response's usage.
func Price(model string, u Usage) float64 {
	p := prices[1].p
	for _, f := range prices {
		if strings.Contains(model, f.family) {
			p = f.p
			break
		}
	}
	in := float64(u.InputTokens) + float64(u.CacheWriteTokens)*cacheWriteFactor + float64(u.CacheReadTokens)*cacheReadFactor
	return (in*p.input + float64(u.OutputTokens)*p.output) / 1e6
}
