package form

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// The encodings of an array field. A client sends the values of an array field `name` as
// `name[]=v` (what HTML forms and most PHP clients write), as `name[N]=v` with N a decimal index
// (what PHP's http_build_query, Guzzle's form_params and oapi-codegen's form bodies write:
// `name[0]=2&name[1]=3`), or as a repeated `name=v` (what OpenAPI's style=form, explode=true
// describes), in any mix. The values are ordered indexed first, by N ascending (two values with
// one N in arrival order), then the others in arrival order: so an indexed list reads in the order
// its indices give, whatever order a client wrote its pairs in.

// ArrayKey reads key as an element of the array field name: `name`, `name[]` or `name[N]`
// (N ASCII decimal digits, leading zeros allowed, at most math.MaxInt64). An index is only ever
// compared, never used to allocate, so `name[999999999]` is one value like `name[0]`. elem is false for a key of
// another field; malformed is true for a key that starts `name[` but is none of the encodings
// (`name[x]`, `name[1][2]`, `name[-1]`, `name[` ...): a client meant this array and wrote it
// wrong, which is not the same as not sending it.
func ArrayKey(key, name string) (index int64, indexed, elem, malformed bool) {
	if key == name {
		return 0, false, true, false
	}
	rest, ok := strings.CutPrefix(key, name+"[")
	if !ok {
		return 0, false, false, false
	}
	digits, ok := strings.CutSuffix(rest, "]")
	if !ok {
		return 0, false, false, true
	}
	if digits == "" {
		return 0, false, true, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false, false, true
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64) // digits only: the one error is a range error
	if err != nil {
		return 0, false, false, true
	}
	return n, true, true, false
}

// Array gathers the values of one array field as they arrive, in any of the encodings, and gives
// them back in the order the encodings' rule sets. It holds one entry per value added: the
// caller's bound on the fields it reads bounds it.
type Array struct {
	indexed []indexedValue
	plain   []string
}

type indexedValue struct {
	index int64
	value string
}

// Add records one value: at index when indexed, else after every indexed value, in arrival order.
func (a *Array) Add(index int64, indexed bool, value string) {
	if indexed {
		a.indexed = append(a.indexed, indexedValue{index, value})
		return
	}
	a.plain = append(a.plain, value)
}

// Len is the number of values added.
func (a *Array) Len() int { return len(a.indexed) + len(a.plain) }

// Values returns the values: indexed ones by index ascending (a stable sort: one index twice
// keeps arrival order), then the others in arrival order.
func (a *Array) Values() []string {
	indexed := slices.Clone(a.indexed)
	slices.SortStableFunc(indexed, func(x, y indexedValue) int { return cmp.Compare(x.index, y.index) })
	out := make([]string, 0, a.Len())
	for _, v := range indexed {
		out = append(out, v.value)
	}
	return append(out, a.plain...)
}
