package form

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestArrayKey(t *testing.T) {
	tests := []struct {
		key                      string
		index                    int64
		indexed, elem, malformed bool
	}{
		{"ids", 0, false, true, false},
		{"ids[]", 0, false, true, false},
		{"ids[0]", 0, true, true, false},
		{"ids[17]", 17, true, true, false},
		{"ids[007]", 7, true, true, false},
		{"ids[999999999]", 999999999, true, true, false},
		{"ids[9223372036854775807]", 1<<63 - 1, true, true, false},
		// Another field, or a longer name that shares the prefix.
		{"title", 0, false, false, false},
		{"idsx", 0, false, false, false},
		{"ids_2[]", 0, false, false, false},
		{"", 0, false, false, false},
		// This array, written wrong.
		{"ids[9223372036854775808]", 0, false, false, true},
		{"ids[x]", 0, false, false, true},
		{"ids[-1]", 0, false, false, true},
		{"ids[+1]", 0, false, false, true},
		{"ids[ 1]", 0, false, false, true},
		{"ids[1][2]", 0, false, false, true},
		{"ids[][]", 0, false, false, true},
		{"ids[", 0, false, false, true},
		{"ids[1", 0, false, false, true},
		{"ids[]x", 0, false, false, true},
	}
	for _, tt := range tests {
		index, indexed, elem, malformed := ArrayKey(tt.key, "ids")
		if index != tt.index || indexed != tt.indexed || elem != tt.elem || malformed != tt.malformed {
			t.Errorf("ArrayKey(%q) = %d, %v, %v, %v; want %d, %v, %v, %v", tt.key, index, indexed, elem, malformed,
				tt.index, tt.indexed, tt.elem, tt.malformed)
		}
	}
}

// arrayOf reads the array field name from a raw form, as a reader of fields does.
func arrayOf(raw, name string) (values []string, malformed int) {
	var a Array
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		key, value := Pair(pair)
		index, indexed, elem, bad := ArrayKey(key, name)
		if bad {
			malformed++
		}
		if elem {
			a.Add(index, indexed, value)
		}
	}
	return a.Values(), malformed
}

func TestArrayOrder(t *testing.T) {
	tests := []struct {
		raw  string
		want []string
	}{
		{"", []string{}},
		{"ids[]=2&ids[]=3", []string{"2", "3"}},
		{"ids=2&ids=3", []string{"2", "3"}},
		{"ids[0]=2&ids[1]=3", []string{"2", "3"}},
		{"ids%5B0%5D=2&ids%5B1%5D=3", []string{"2", "3"}},
		{"ids[1]=3&ids[0]=2", []string{"2", "3"}},
		{"ids[10]=c&ids[9]=b&ids[0]=a", []string{"a", "b", "c"}},
		// Indexed first by index, the others after them in arrival order.
		{"ids[]=p&ids[5]=b&ids=q&ids[1]=a&ids[]=r", []string{"a", "b", "p", "q", "r"}},
		// One index twice: both, in arrival order.
		{"ids[1]=x&ids[0]=w&ids[1]=y", []string{"w", "x", "y"}},
		// A huge index is one value, not a sparse array.
		{"ids[999999999]=z&ids[0]=a", []string{"a", "z"}},
		{"ids[]=&ids=", []string{"", ""}},
		{"title=t&ids[x]=9&ids[]=1", []string{"1"}},
	}
	for _, tt := range tests {
		if got, _ := arrayOf(tt.raw, "ids"); !slices.Equal(got, tt.want) {
			t.Errorf("%q: %q, want %q", tt.raw, got, tt.want)
		}
	}
}

// encodings writes values as each of the three encodings.
func encodings(name string, values []string) map[string]string {
	var brackets, indexed, repeated []string
	for i, v := range values {
		e := escape(v)
		brackets = append(brackets, name+"%5B%5D="+e)
		indexed = append(indexed, fmt.Sprintf("%s%%5B%d%%5D=%s", name, i, e))
		repeated = append(repeated, name+"="+e)
	}
	// The indexed encoding in reverse order reads the same: the indices order it.
	reversed := slices.Clone(indexed)
	slices.Reverse(reversed)
	return map[string]string{
		"name[]": strings.Join(brackets, "&"), "name[N]": strings.Join(indexed, "&"),
		"name[N] reversed": strings.Join(reversed, "&"), "name": strings.Join(repeated, "&"),
	}
}

func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// FuzzArray: any form reads without panic into at most one value per pair, and any list of values
// reads back as itself from each of the three encodings.
func FuzzArray(f *testing.F) {
	for _, s := range []string{"", "ids[]=1&ids[2]=3&ids=4", "ids[99999999999999999999]=1", "ids[1][2]=3&ids[", "a\x00b&ids[0]=\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		values, malformed := arrayOf(raw, "ids")
		if pairs := strings.Count(raw, "&") + 1; len(values)+malformed > pairs {
			t.Fatalf("%q: %d values and %d malformed keys from at most %d pairs", raw, len(values), malformed, pairs)
		}
		list := strings.Split(raw, "&") // any list, "&" included in values once escaped
		for enc, form := range encodings("ids", list) {
			got, bad := arrayOf(form, "ids")
			if bad != 0 || !slices.Equal(got, list) {
				t.Fatalf("%s of %q: read %q (%d malformed)", enc, list, got, bad)
			}
		}
	})
}
